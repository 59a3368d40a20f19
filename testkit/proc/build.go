// Package proc builds corral's binary and runs the processes of the
// real-process test tiers (e2e/ and jepsen/): start, graceful stop, kill,
// pause (SIGSTOP) and resume, each returning an error when the signal could
// not be delivered or the process did not do what it was told; free ports
// on 127.0.0.x; waits for listeners; log tails and data-race reports.
//
// It must not import corral's internals (fsm, cluster, api, ironic, …):
// the jepsen module imports it and treats corral as a black box. It knows
// nothing of corral's flags; callers pass the arguments.
package proc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// RaceEnv turns the race detector on (1, true) or off (0, false) in the
// binaries Build compiles; unset, it is on when CI=true.
const RaceEnv = "CORRAL_RACE"

// BinEnv names a prebuilt corral binary that Corral returns instead of
// building one.
const BinEnv = "CORRAL_BIN"

// RaceFromEnv reports whether binaries are to be race-instrumented:
// $CORRAL_RACE when it is set, else whether $CI is true.
func RaceFromEnv() bool {
	switch strings.ToLower(os.Getenv(RaceEnv)) {
	case "1", "true", "yes":
		return true
	case "0", "false", "no":
		return false
	}
	return strings.EqualFold(os.Getenv("CI"), "true")
}

// Build compiles the main package pkg (e.g. "./cmd/corral") of the module
// at root into out, with -race when race is set.
func Build(ctx context.Context, root, pkg, out string, race bool) error {
	args := []string{"build", "-o", out}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
	cmd.Dir = root
	cmd.Env = os.Environ()
	if race {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=1") // the race detector needs cgo
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " ")+" "+pkg, root, err, b)
	}
	return os.Chmod(out, 0o755)
}

// Built is a binary Corral returned.
type Built struct {
	Path string
	Race bool          // compiled with -race
	Took time.Duration // 0 when it came from $CORRAL_BIN or an earlier call
}

var (
	corralMu    sync.Mutex
	corralBuilt = map[string]Built{}
)

// Corral returns the corral binary of the module at root: $CORRAL_BIN when
// set, else ./cmd/corral built once per process (per root) into a
// directory of its own, race-instrumented when RaceFromEnv says so. The
// directory is world-readable so that agents running as other uids can
// execute the binary.
func Corral(root string) (Built, error) {
	if b := os.Getenv(BinEnv); b != "" {
		return Built{Path: b}, nil
	}
	corralMu.Lock()
	defer corralMu.Unlock()
	if b, ok := corralBuilt[root]; ok {
		return Built{Path: b.Path, Race: b.Race}, nil
	}
	dir, err := os.MkdirTemp("", "corral-bin-")
	if err != nil {
		return Built{}, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return Built{}, err
	}
	b := Built{Path: filepath.Join(dir, "corral"), Race: RaceFromEnv()}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := Build(ctx, root, "./cmd/corral", b.Path, b.Race); err != nil {
		return Built{}, err
	}
	b.Took = time.Since(start)
	corralBuilt[root] = b
	return b, nil
}
