package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// quickStartBlock returns the commands README.md gives to try after
// `corral dev`: the second sh block under the "One command" heading.
func quickStartBlock(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "### One command: `corral dev`")
	if i < 0 {
		t.Fatal("README.md has no \"One command: `corral dev`\" section")
	}
	text = text[i:]
	var blocks []string
	for len(blocks) < 2 {
		start := strings.Index(text, "```sh\n")
		if start < 0 {
			t.Fatalf("README.md's quick start has %d sh blocks, want 2", len(blocks))
		}
		text = text[start+len("```sh\n"):]
		end := strings.Index(text, "```")
		blocks = append(blocks, text[:end])
		text = text[end+3:]
	}
	return blocks[1]
}

// TestReadmeQuickStart runs README.md's quick start as written against
// `corral dev`, so the two cannot drift apart.
func TestReadmeQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts corral dev")
	}
	block := quickStartBlock(t)
	const token = "dev-quickstart-token"
	if !strings.Contains(block, "CORRAL_TOKEN=dev-…") {
		t.Fatalf("the quick start no longer sets CORRAL_TOKEN from dev's output:\n%s", block)
	}
	block = strings.ReplaceAll(block, "dev-…", token)

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(Binary(t), filepath.Join(dir, "bin", "corral")); err != nil {
		t.Fatal(err)
	}

	dev := exec.Command("./bin/corral", "dev", "--data-dir", filepath.Join(dir, "data"))
	dev.Dir = dir
	dev.Env = append(os.Environ(), "CORRAL_ADMIN_TOKEN="+token)
	stdout, err := dev.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	dev.Stderr = &stderr
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		seen := false
		for sc.Scan() {
			if !seen && strings.Contains(sc.Text(), "export CORRAL_TOKEN=") {
				seen = true
				close(ready)
			}
		}
		exited <- dev.Wait()
	}()
	defer func() {
		_ = dev.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = dev.Process.Kill()
			<-exited
			t.Error("corral dev did not stop within 30 s of Ctrl-C")
		}
		if t.Failed() {
			t.Logf("corral dev stderr (tail):\n%s", tail(stderr.String(), 4000))
		}
	}()
	select {
	case <-ready:
	case err := <-exited:
		exited <- err
		t.Fatalf("corral dev exited before it was ready: %v", err)
	case <-time.After(90 * time.Second):
		t.Fatal("corral dev did not print its address and token within 90 s")
	}

	// Each command on its own, so a failure names the command.
	for _, cmdline := range commandsOf(block) {
		sh := exec.Command("bash", "-euo", "pipefail", "-c", exportsOf(block)+cmdline)
		sh.Dir = dir
		out, err := sh.CombinedOutput()
		if err != nil {
			t.Fatalf("README quick start: %s\nfailed: %v\n%s", cmdline, err, out)
		}
		t.Logf("$ %s\n%s", cmdline, out)
		if strings.Contains(cmdline, "server create") && !strings.Contains(string(out), "ACTIVE") {
			t.Fatalf("README quick start: %s did not end ACTIVE:\n%s", cmdline, out)
		}
	}
}

// exportsOf returns the block's export lines as one prefix.
func exportsOf(block string) string {
	var b strings.Builder
	for _, l := range strings.Split(block, "\n") {
		if strings.HasPrefix(l, "export ") {
			fmt.Fprintln(&b, l)
		}
	}
	return b.String()
}

// commandsOf returns the block's commands other than exports, with
// continuation lines joined.
func commandsOf(block string) []string {
	var out []string
	var cur strings.Builder
	for _, l := range strings.Split(block, "\n") {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "export ") {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cur.WriteString(strings.TrimSuffix(l, "\\"))
			continue
		}
		cur.WriteString(l)
		out = append(out, strings.TrimSpace(cur.String()))
		cur.Reset()
	}
	return out
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
