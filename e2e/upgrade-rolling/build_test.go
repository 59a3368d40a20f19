package upgraderolling

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// baseCommit is the previous release the upgrade starts from (see the
// package documentation for why this one).
const baseCommit = "c06b12d"

// repoRoot is the root of the git work tree holding this test.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// goBuild builds ./cmd/corral of the module at dir into out as `make
// static` does (CGO_ENABLED=0, -trimpath), so both builds share the
// compiled dependencies with the image's and with each other.
func goBuild(ctx context.Context, dir, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, "./cmd/corral")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build in %s: %w\n%s", dir, err, b)
	}
	return nil
}

// extract writes the tree of commit into dir (git archive).
func extract(ctx context.Context, root, commit, dir string) error {
	if err := exec.CommandContext(ctx, "git", "-C", root, "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		return fmt.Errorf("git history has no commit %s, the release the rolling upgrade starts from "+
			"(a shallow clone? `git fetch --unshallow`): %w", commit, err)
	}
	cmd := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", commit)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	tr := tar.NewReader(out)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("git archive %s: %w", commit, err)
		}
		path := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(path, filepath.Clean(dir)+string(os.PathSeparator)) {
			continue // pax headers and the like
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755)
		case tar.TypeReg:
			err = writeFile(path, tr, os.FileMode(h.Mode)&0o777)
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, path)
		}
		if err != nil {
			return err
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git archive %s: %w: %s", commit, err, stderr.String())
	}
	return nil
}

func writeFile(path string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// binaries builds the previous release and this tree, at once, into a
// directory the agents can read.
func binaries(t *testing.T) (oldBin, newBin string) {
	t.Helper()
	root := repoRoot(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	oldBin, newBin = filepath.Join(dir, "corral-"+baseCommit), filepath.Join(dir, "corral-new")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	errs := make(chan error, 2)
	go func() {
		src := filepath.Join(t.TempDir(), "src")
		if err := extract(ctx, root, baseCommit, src); err != nil {
			errs <- err
			return
		}
		errs <- goBuild(ctx, src, oldBin)
	}()
	go func() { errs <- goBuild(ctx, root, newBin) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("built corral at %s and at this tree in %s", baseCommit, time.Since(start).Round(time.Millisecond))
	return oldBin, newBin
}
