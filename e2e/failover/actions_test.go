package failover

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/ironic/sim"
)

// actionRig is a 3-host cluster whose agents can be cut off from one
// another (Ironic stays reachable), with a way to count the side effects
// Ironic took on a node.
type actionRig struct {
	t      *testing.T
	is     *isolation
	c      *e2e.Cluster
	flavor string
	// taken counts the side effects Ironic took on node: "rebuild", or a
	// power target ("rebooting"); detail says who sent them, if known.
	taken func(node, step string) (n int, detail string)
}

// serverOf returns the live server id owned by a host that is not the
// leader, and that host.
func (r *actionRig) serverOf(ids []string) (server, *e2e.Agent) {
	r.t.Helper()
	leader := r.c.Leader(10 * time.Second)
	f := &fixture{t: r.t, c: r.c}
	srv := f.waitServers(leader, ids, 60*time.Second, "servers ACTIVE", active)
	for _, id := range ids {
		s := srv[id]
		if s.Host != leader.Name && s.Task == "" {
			return s, f.agent(s.Host)
		}
	}
	r.t.Fatalf("no server owned by a host other than the leader %s: %v", leader.Name, srv)
	return server{}, nil
}

// action sends one action with a request id of the test's choosing.
func (r *actionRig) action(a *e2e.Agent, id string, body map[string]any) string {
	r.t.Helper()
	rid := "req-" + uuid.NewString()
	cl := a.Client()
	cl.Headers = map[string]string{"X-OpenStack-Request-Id": rid}
	ctx, cancel := ctx10()
	defer cancel()
	if err := cl.Do(ctx, http.MethodPost, "/compute/v2.1/servers/"+id+"/action", body, nil); err != nil {
		r.t.Fatalf("action %v on %s: %v", body, id, err)
	}
	return rid
}

// partitionedOwner requests an action on a server of a non-leader host,
// cuts that host off from the others as soon as Ironic took the side
// effect, keeps it cut off for hold after a survivor finished the action,
// heals it, and checks that Ironic took the side effect exactly once.
func (r *actionRig) partitionedOwner(ids []string, what string, body map[string]any, step string, hold time.Duration) {
	r.t.Helper()
	s, owner := r.serverOf(ids)
	before, _ := r.taken(s.Node, step)
	r.action(owner, s.ID, body)
	pollUntil(r.t, what+" taken by Ironic", 60*time.Second, 50*time.Millisecond, func() error {
		if n, _ := r.taken(s.Node, step); n == before {
			return fmt.Errorf("Ironic took no %s on node %s yet", step, s.Node)
		}
		return nil
	})
	var others []*e2e.Agent
	for _, a := range r.c.Agents {
		if a != owner {
			others = append(others, a)
		}
	}
	r.is.cut(owner, others)
	cutAt := time.Now()
	f := &fixture{t: r.t, c: r.c}
	obs := others[0]
	f.poll(what+" finished by a survivor", 90*time.Second, 100*time.Millisecond, func() error {
		o, err := f.owner(obs, s.ID, "linearizable")
		if err != nil {
			return err
		}
		srv, err := f.servers(obs)
		if err != nil {
			return err
		}
		if cur := srv[s.ID]; o.Host == owner.Name || cur.Status != "ACTIVE" || cur.Task != "" {
			return fmt.Errorf("server %s is %s/%q owned by %s", s.ID, cur.Status, cur.Task, o.Host)
		}
		return nil
	})
	// The cut-off host keeps running: whatever it would repeat, it
	// repeats while it is cut off (there is no state to wait for).
	<-time.After(time.Until(cutAt.Add(hold)))
	r.is.heal()
	f.poll("the healed host sees the new owner", 60*time.Second, 100*time.Millisecond, func() error {
		o, err := f.owner(owner, s.ID, "stale")
		if err != nil {
			return err
		}
		if o.Host == owner.Name {
			return fmt.Errorf("%s still believes it owns %s", owner.Name, s.ID)
		}
		return nil
	})
	<-time.After(3 * time.Second) // a late repeat from the healed host
	if n, detail := r.taken(s.Node, step); n-before != 1 {
		r.t.Fatalf("one %s request became %d %s side effects in Ironic on node %s: %s", what, n-before, step, s.Node, detail)
	}
}

// TestPartitionedOwnerActsOnce: a rebuild, then a hard reboot, each on a
// server whose owner is cut off from the other peers (Ironic still
// reachable) right after the side effect reached Ironic, held cut off for
// 30 s (longer than the 15 s an owner waits for a commit): Ironic takes
// each side effect once, whichever host finishes the action, counted per
// node from the simulator's record of what it accepted, and per host.
func TestPartitionedOwnerActsOnce(t *testing.T) {
	is := newIsolation(t, 3)
	f := startIn(t, is.cg, 3, 4, sim.Options{DeployDelay: 12 * time.Second, PowerDelay: 3 * time.Second})
	r := &actionRig{t: t, is: is, c: f.c, flavor: flavorID, taken: func(node, step string) (int, string) {
		ws := f.rec.accepted(node, step, step != "rebuild")
		var by []string
		for _, w := range ws {
			by = append(by, w.Host+": "+w.String())
		}
		return len(ws), strings.Join(by, "; ")
	}}
	ids := f.boot(3, "act")
	r.partitionedOwner(ids, "rebuild", map[string]any{"rebuild": map[string]any{"imageRef": "img-2"}}, "rebuild", 30*time.Second)
	r.partitionedOwner(ids, "hard reboot", map[string]any{"reboot": map[string]any{"type": "HARD"}}, "rebooting", 30*time.Second)
}

// TestPartitionedOwnerActsOnceRealIronic is the same against the real
// Ironic at $IRONIC_URL, counting in Ironic's own log (the conductor logs
// every completed deploy and power change of a node; its node history
// records only failures).
func TestPartitionedOwnerActsOnceRealIronic(t *testing.T) {
	ir := e2e.RealIronic(t)
	dir := os.Getenv("IRONIC_DIR")
	if dir == "" {
		t.Fatal("IRONIC_URL is set but IRONIC_DIR is not: the test counts side effects in $IRONIC_DIR/log/ironic.log (scripts/ironic-up.sh)")
	}
	logPath := filepath.Join(dir, "log", "ironic.log")
	is := newIsolation(t, 3)
	class := ir.Class("act")
	ir.EnrollNodes(t, 4, class)
	c := e2e.Start(t, 3, e2e.Options{BaseIP: baseIP, ExtraArgs: []string{"--ironic-url", ir.URL}, Cgroups: is.cg,
		Env: []string{"CORRAL_IRONIC_SYNC_INTERVAL=1s"}})
	c.AwaitReady(60 * time.Second)
	a := c.Agents[0]
	flavor := e2e.BareMetalFlavor(t, a, "act", class)
	r := &actionRig{t: t, is: is, c: c, flavor: flavor, taken: func(node, step string) (int, string) {
		n, err := countIronicLog(logPath, node, step)
		if err != nil {
			t.Fatal(err)
		}
		return n, "counted in " + logPath
	}}
	cl := e2e.Compute(a)
	var ids []string
	for i := range 3 {
		ctx, cancel := ctx10()
		id, err := e2e.Boot(ctx, cl, fmt.Sprintf("act-%d", i), flavor)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	r.partitionedOwner(ids, "rebuild", map[string]any{"rebuild": map[string]any{"imageRef": "http://127.0.0.1/act-2.qcow2"}}, "rebuild", 30*time.Second)
	r.partitionedOwner(ids, "hard reboot", map[string]any{"reboot": map[string]any{"type": "HARD"}}, "rebooting", 30*time.Second)
}

// countIronicLog counts the side effects of step on node that Ironic's
// conductor logged: every completed deploy (a rebuild is one) or every
// power change by target.
func countIronicLog(path, node, step string) (int, error) {
	fh, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read Ironic's log: %w", err)
	}
	defer fh.Close()
	want := "Successfully deployed node " + node
	if step != "rebuild" {
		want = "Successfully set node " + node + " power state to "
	}
	n := 0
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, want) && (step == "rebuild" || strings.Contains(line, " by "+step+".")) {
			n++
		}
	}
	return n, sc.Err()
}

var _ = context.Background
