package keystone

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/e2e"
)

const readmeSection = "### Running inside OpenStack (Keystone)"

// readmeBlocks returns the fenced blocks of the given language in README.md's Keystone section.
func readmeBlocks(t *testing.T, lang string) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, readmeSection)
	if i < 0 {
		t.Fatalf("README.md has no %q section", readmeSection)
	}
	text = text[i+len(readmeSection):]
	if j := strings.Index(text, "\n## "); j >= 0 {
		text = text[:j]
	}
	var out []string
	for {
		start := strings.Index(text, "```"+lang+"\n")
		if start < 0 {
			return out
		}
		text = text[start+len("```"+lang+"\n"):]
		end := strings.Index(text, "```")
		out = append(out, text[:end])
		text = text[end+3:]
	}
}

// readmeConfig writes README.md's agent configuration for Keystone to a file and returns its path.
func readmeConfig(t *testing.T) string {
	t.Helper()
	ini := readmeBlocks(t, "ini")
	if len(ini) != 1 || !strings.Contains(ini[0], "strategy = keystone") || !strings.Contains(ini[0], "auth_type = password") {
		t.Fatalf("README.md's Keystone section should hold one ini block with strategy = keystone and auth_type = password: %q", ini)
	}
	p := filepath.Join(t.TempDir(), "corral-keystone.conf")
	if err := os.WriteFile(p, []byte(ini[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadmeKeystone runs README.md's Keystone example: an agent with its configuration file, and
// its commands with alice's Keystone token, against the control plane.
func TestReadmeKeystone(t *testing.T) {
	cl := realCloud(t)
	sh := readmeBlocks(t, "sh")
	if len(sh) < 2 {
		t.Fatalf("README.md's Keystone section has %d sh blocks, want the control plane's and the agent's", len(sh))
	}
	// One agent, as README.md starts it: with no peer to join (a lone agent that has peers to join
	// is not ready until one answers).
	c := e2e.StartWith(t, 1, e2e.Options{BaseIP: baseIP + 20, ExtraArgs: []string{"--config", readmeConfig(t)},
		Env: cl.passwords()}, func(_ int, a *e2e.Agent) {
		var args []string
		for i := 0; i < len(a.Args); i++ {
			if a.Args[i] == "--join" {
				i++
				continue
			}
			args = append(args, a.Args[i])
		}
		a.Args = args
	})
	c.AwaitReady(60 * time.Second)
	a := c.Agents[0]

	// The block after the agent's start, with this agent's address.
	lines := strings.Split(sh[1], "\n")
	k := 0
	for k < len(lines) && !strings.HasSuffix(strings.TrimSpace(lines[k]), "&") {
		k++
	}
	if k == len(lines) {
		t.Fatalf("README.md's agent block does not start an agent in the background:\n%s", sh[1])
	}
	script := strings.Join(lines[k+1:], "\n")
	if !strings.Contains(script, "export CORRAL_ADDR=http://127.0.0.2:7480") {
		t.Fatalf("README.md's agent block no longer sets CORRAL_ADDR:\n%s", script)
	}
	script = strings.ReplaceAll(script, "http://127.0.0.2:7480", a.URL())
	script = strings.ReplaceAll(script, `"password": "corral-demo"`, `"password": "`+cl.env("ALICE_PASSWORD")+`"`)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(c.Bin, filepath.Join(dir, "bin", "corral")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CORRAL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("README.md's Keystone commands failed: %v\n%s\n---\n%s", err, out, script)
	}
	t.Logf("%s", out)
}

// passwords are the environment that gives README.md's configuration this control plane's
// addresses and service password, should they differ from the defaults written there.
func (c *cloud) passwords() []string {
	return []string{"CORRAL_KEYSTONE_AUTHTOKEN_AUTH_URL=" + c.authURL, "CORRAL_KEYSTONE_AUTHTOKEN_WWW_AUTHENTICATE_URI=" + c.authURL,
		"CORRAL_KEYSTONE_AUTHTOKEN_PASSWORD=" + c.env("CORRAL_SERVICE_PASSWORD"), "CORRAL_IRONIC_AUTH_URL=" + c.authURL,
		"CORRAL_IRONIC_PASSWORD=" + c.env("CORRAL_SERVICE_PASSWORD")}
}
