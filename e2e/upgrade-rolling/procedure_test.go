package upgraderolling

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/testkit"
)

const operationsDoc = "../../docs/operations.md"

// procedure returns the commands of the sh block under the heading of
// docs/operations.md that starts with heading, each with its comment.
func procedure(t *testing.T, heading string) [][2]string {
	t.Helper()
	b, err := os.ReadFile(operationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no heading %q", operationsDoc, heading)
	}
	text = text[i:]
	start := strings.Index(text, "```sh\n")
	if start < 0 {
		t.Fatalf("%s: no sh block under %q", operationsDoc, heading)
	}
	text = text[start+len("```sh\n"):]
	var steps [][2]string
	for _, l := range strings.Split(text[:strings.Index(text, "```")], "\n") {
		cmd, comment, _ := strings.Cut(l, "#")
		if cmd = strings.TrimSpace(cmd); cmd != "" {
			steps = append(steps, [2]string{cmd, strings.TrimSpace(comment)})
		}
	}
	if len(steps) == 0 {
		t.Fatalf("%s: the sh block under %q is empty", operationsDoc, heading)
	}
	return steps
}

// operator runs the procedure's commands: `corral ...` with the new
// binary's CLI, `systemctl` and `install` on the peer being upgraded.
type operator struct {
	t       *testing.T
	c       *e2e.Cluster
	oldBin  string
	newBin  string
	version string // the new binary's
	cmds    string // the new binary's command types
	// beforeStop and beforeStart, when set, run just before a peer is
	// stopped, and started again.
	beforeStop, beforeStart func(a *e2e.Agent)
}

// run carries out the steps of one block; peer is the peer being
// upgraded (nil for the blocks around the upgrade).
func (o *operator) run(steps [][2]string, peer *e2e.Agent) {
	o.t.Helper()
	var catchUpTo uint64
	for _, st := range steps {
		cmd, comment := st[0], st[1]
		switch {
		case cmd == "systemctl stop corral":
			if o.beforeStop != nil {
				o.beforeStop(peer)
			}
			peer.Stop(20 * time.Second)
		case cmd == "install -m 0755 corral /usr/bin/corral":
			peer.Bin = o.newBin
		case cmd == "systemctl start corral":
			if o.beforeStart != nil {
				o.beforeStart(peer)
			}
			catchUpTo = o.leaderCommit()
			peer.Start()
		case strings.HasPrefix(cmd, "corral "):
			args := strings.Fields(strings.TrimPrefix(cmd, "corral "))
			for i, a := range args {
				if peer != nil {
					args[i] = strings.ReplaceAll(a, "http://PEER:7480", peer.URL())
				}
			}
			o.corral(args, comment, peer, catchUpTo)
		default:
			o.t.Fatalf("the procedure's step %q is not one this test knows how to run: teach it, or fix %s", cmd, operationsDoc)
		}
		o.t.Logf("procedure: %s", cmd)
	}
}

// leaderCommit is the leader's commit index now.
func (o *operator) leaderCommit() uint64 {
	o.t.Helper()
	var idx uint64
	testkit.Eventually(o.t, 30*time.Second, func() error {
		l := o.c.Leader(30 * time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := l.Client().RaftStatus(ctx)
		idx = st.CommitIndex
		return err
	})
	return idx
}

// corral runs one CLI command until what its comment says to wait for
// holds (at most 60 s).
func (o *operator) corral(args []string, comment string, peer *e2e.Agent, catchUpTo uint64) {
	o.t.Helper()
	testkit.Eventually(o.t, 60*time.Second, func() error {
		out, err := o.cli(args...)
		if err != nil {
			return err
		}
		switch args[len(args)-1] {
		case "version":
			if !strings.Contains(out, o.version) || !strings.Contains(out, "command types: "+o.cmds) {
				return fmt.Errorf("corral version printed %q", out)
			}
		case "status": // raft status
			rows := fields(out)
			applied, _ := strconv.ParseUint(rows["applied_index"], 10, 64)
			if peer != nil && rows["peer"] != peer.Name {
				return fmt.Errorf("raft status answered by %q, not %s", rows["peer"], peer.Name)
			}
			if applied < catchUpTo {
				return fmt.Errorf("%s applied %d of the %d the leader had committed when it started", peer.Name, applied, catchUpTo)
			}
		case "members":
			members := table(out)
			if len(members) != len(o.c.Agents) {
				return fmt.Errorf("corral members lists %d peers: %s", len(members), out)
			}
			for _, m := range members {
				switch {
				case m["STATUS"] != "alive":
					return fmt.Errorf("%s is %s", m["NAME"], m["STATUS"])
				case peer != nil && m["NAME"] == peer.Name && m["VERSION"] != o.version:
					return fmt.Errorf("%s runs version %q, not %q", m["NAME"], m["VERSION"], o.version)
				case strings.Contains(comment, "every peer at the new VERSION") && (m["VERSION"] != o.version || m["COMMANDS"] != o.cmds):
					return fmt.Errorf("%s runs %q with command types %q", m["NAME"], m["VERSION"], m["COMMANDS"])
				}
			}
		default:
			o.t.Fatalf("the procedure's command corral %s is not one this test checks", strings.Join(args, " "))
		}
		return nil
	})
}

// cli runs the new binary's CLI against a running peer.
func (o *operator) cli(args ...string) (string, error) {
	addr := ""
	for _, a := range o.c.Agents {
		if a.Running() {
			addr = a.URL()
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.newBin, args...)
	cmd.Env = append(os.Environ(), "CORRAL_ADDR="+addr, "CORRAL_TOKEN="+o.c.Token)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("corral %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// table parses the CLI's table output into rows keyed by header.
func table(out string) []map[string]string {
	var header []string
	var rows []map[string]string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "│") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(l, "│"), "│") {
			cells = append(cells, strings.TrimSpace(c))
		}
		if header == nil {
			header = cells
			continue
		}
		row := map[string]string{}
		for i, h := range header {
			if i < len(cells) {
				row[h] = cells[i]
			}
		}
		rows = append(rows, row)
	}
	return rows
}

var fieldRow = regexp.MustCompile(`^│\s*(\S+)\s*│\s*(.*?)\s*│$`)

// fields parses the CLI's FIELD | VALUE output.
func fields(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := fieldRow.FindStringSubmatch(l); f != nil {
			m[f[1]] = f[2]
		}
	}
	return m
}
