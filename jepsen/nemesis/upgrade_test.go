package nemesis

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/jepsen/cluster"
)

// The upgrade stops the old agent, installs the new binary over its own
// and starts it again at the heal, once, as the first fault due from its
// time on: with no other family, it is the run's only fault.
func TestUpgradeReplacesTheAgentsBinary(t *testing.T) {
	cl := sleepers(t)
	dir := t.TempDir()
	oldBin, newBin := filepath.Join(dir, "old"), filepath.Join(dir, "new")
	for _, f := range []struct{ path, body string }{
		{oldBin, "#!/bin/sh\necho old\nexec sleep 60\n"}, {newBin, "#!/bin/sh\necho new\nexec sleep 60\n"}} {
		if err := os.WriteFile(f.path, []byte(f.body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a := cl.Agents[len(cl.Agents)-1]
	own := filepath.Join(dir, "bin-"+a.Name, "corral")
	if err := cluster.Install(oldBin, own); err != nil {
		t.Fatal(err)
	}
	a.UseBinary(own)
	if err := cl.Start(); err != nil {
		t.Fatal(err)
	}
	n := nemesisOn(t, cl)
	n.Upgrade = &Upgrade{Agent: a, At: 50 * time.Millisecond, Bin: newBin}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n.Run(ctx, 400*time.Millisecond)
	ws := n.Windows()
	if len(ws) != 1 || ws[0].Name != "upgrade" || ws[0].Error != "" || ws[0].HealError != "" || !n.Upgrade.Done() {
		t.Fatalf("windows %+v, done %v: want one upgrade, injected and healed", ws, n.Upgrade.Done())
	}
	if !a.Running() {
		t.Fatal("the upgraded agent is not running")
	}
	got, err := os.ReadFile(own)
	if err != nil || !strings.Contains(string(got), "echo new") {
		t.Fatalf("the agent's binary is %q (%v), want the new one", got, err)
	}
	log, err := os.ReadFile(a.LogPath())
	if err != nil || !strings.Contains(string(log), "old\n") || !strings.HasSuffix(string(log), "new\n") {
		t.Fatalf("the agent's log %q: want a start of the old binary, then one of the new", log)
	}
}
