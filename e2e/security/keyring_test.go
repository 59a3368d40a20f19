package security

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/testkit"
	"github.com/corral-dev/corral/wire"
)

// corral runs the CLI against agent a and returns its standard output.
func corral(t *testing.T, bin string, a *e2e.Agent, token string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"CORRAL_ADDR=" + a.URL(), "CORRAL_TOKEN=" + token}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("corral %s: %w: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), err
}

func keygen(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "keygen").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// allAlive checks that every agent sees every name alive in gossip.
func allAlive(agents []*e2e.Agent, want []string) error {
	for _, a := range agents {
		ms, err := members(a)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if slices.Contains(want, m.Name) && m.Status != "alive" {
				return fmt.Errorf("%s sees %s %s", a.Name, m.Name, m.Status)
			}
		}
		if got := len(ms); got != len(want) {
			return fmt.Errorf("%s sees %d members, want %d: %+v", a.Name, got, len(want), ms)
		}
	}
	return nil
}

// TestGossipKeyRotationUnderLoad: three agents with gossip encryption
// boot and delete servers while the key is rotated with `corral keyring
// install|use|remove`; no peer is ever seen dead or marked down, every
// server ends ACTIVE or deleted as asked, Ironic agrees, and a peer
// restarted after the rotation rejoins with the keyring it kept (its
// configuration still names the old key). A peer without the key never
// appears in the cluster.
func TestGossipKeyRotationUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := e2e.Binary(t)
	k1, k2 := keygen(t, bin), keygen(t, bin)
	ir := e2e.SimIronic(t, sim.Options{DeployDelay: 100 * time.Millisecond, UndeployDelay: 100 * time.Millisecond})
	class := ir.Class("gold")
	nodeIDs := ir.EnrollNodes(t, 16, class)
	c := e2e.IronicCluster(t, 3, ir, "CORRAL_GOSSIP_ENCRYPT="+k1)
	e2e.AwaitNodes(t, c.Agents[0], nodeIDs, 30*time.Second)
	flavor := e2e.BareMetalFlavor(t, c.Agents[1], "bm-gold", class)
	peers := []string{"peer1", "peer2", "peer3"}
	testkit.Eventually(t, 20*time.Second, func() error { return allAlive(c.Agents, peers) })

	// A stranger without the key tries to join.
	s := e2e.Start(t, 1, e2e.Options{BaseIP: 9, ExtraArgs: []string{"--join", c.Agents[0].GossipAddr()}})
	s.Agents[0].Name = "stranger"

	// Workload: boot 10 servers, delete every other one, through each agent in turn.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var booted, deleted []string
	var werr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 10 {
			id, err := e2e.Boot(ctx, e2e.Compute(c.Agents[i%3]), fmt.Sprintf("rot-%d", i), flavor)
			mu.Lock()
			if err != nil {
				werr = err
				mu.Unlock()
				return
			}
			booted = append(booted, id)
			mu.Unlock()
			if i%2 == 1 {
				if err := servers.Delete(ctx, e2e.Compute(c.Agents[(i+1)%3]), id).ExtractErr(); err != nil {
					mu.Lock()
					werr = fmt.Errorf("delete %s: %w", id, err)
					mu.Unlock()
					return
				}
				mu.Lock()
				deleted = append(deleted, id)
				mu.Unlock()
			}
			time.Sleep(150 * time.Millisecond) // spreads the workload over the rotation
		}
	}()

	// Rotate, each step through another agent, checking each step's result.
	steps := []struct {
		args    []string
		primary string
		keys    int
	}{
		{[]string{"keyring", "install", k2}, k1, 2},
		{[]string{"keyring", "use", k2}, k2, 2},
		{[]string{"keyring", "remove", k1}, k2, 1},
	}
	for i, st := range steps {
		if _, err := corral(t, bin, c.Agents[i], c.Token, st.args...); err != nil {
			t.Fatal(err)
		}
		out, err := corral(t, bin, c.Agents[(i+1)%3], c.Token, "keyring", "list", "-f", "json")
		if err != nil {
			t.Fatal(err)
		}
		var resp wire.KeyringResponse
		if err := json.Unmarshal([]byte(out), &resp); err != nil {
			t.Fatalf("keyring list output %q: %v", out, err)
		}
		if len(resp.Peers) != 3 {
			t.Fatalf("after %v: keyrings of %d peers: %s", st.args, len(resp.Peers), out)
		}
		for _, p := range resp.Peers {
			if p.Primary != st.primary || len(p.Keys) != st.keys {
				t.Fatalf("after %v: peer %s has primary %s and %d keys", st.args, p.Peer, p.Primary, len(p.Keys))
			}
		}
		if err := allAlive(c.Agents, peers); err != nil {
			t.Fatalf("after %v: %v", st.args, err)
		}
	}
	// A key that is not base64 is refused by the CLI before anything is sent.
	if _, err := corral(t, bin, c.Agents[0], c.Token, "keyring", "install", "not-base64!"); err == nil || !strings.Contains(err.Error(), "not base64") {
		t.Fatalf("bad key: %v", err)
	}
	wg.Wait()
	if werr != nil {
		t.Fatal(werr)
	}

	cl := e2e.Compute(c.Agents[0])
	var kept []string
	for _, id := range booted {
		if !slices.Contains(deleted, id) {
			kept = append(kept, id)
		}
	}
	got := e2e.WaitServers(t, cl, kept, 90*time.Second, e2e.Settled)
	onNode := map[string]string{}
	for _, id := range kept {
		if got[id].Status != "ACTIVE" {
			t.Fatalf("server %s is %s", id, got[id].Status)
		}
		if other, dup := onNode[got[id].HypervisorHostname]; dup {
			t.Fatalf("servers %s and %s on one node", other, id)
		}
		onNode[got[id].HypervisorHostname] = id
	}
	e2e.WaitGone(t, cl, deleted, 60*time.Second)
	testkit.Eventually(t, 30*time.Second, func() error {
		allocs, err := ir.Allocations(ctx, class)
		if err != nil {
			return err
		}
		if len(allocs) != len(kept) {
			return fmt.Errorf("Ironic holds %d allocations, want %d", len(allocs), len(kept))
		}
		return nil
	})
	hs, err := e2e.Hosts(ctx, c.Agents[2])
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs.Hosts {
		if string(h.Status) != "up" || h.Name == "stranger" {
			t.Fatalf("host %s is %s", h.Name, h.Status)
		}
	}
	if len(hs.Hosts) != 3 {
		t.Fatalf("%d hosts", len(hs.Hosts))
	}
	// The stranger never got in: the cluster does not list it, and it
	// sees nobody.
	if err := allAlive(c.Agents, peers); err != nil {
		t.Fatal(err)
	}
	ms, err := members(s.Agents[0])
	if err != nil || len(ms) != 1 {
		t.Fatalf("the stranger sees %+v (%v)", ms, err)
	}

	// A restarted peer keeps the rotated keyring although its configuration names k1.
	c.Agents[2].Stop(10 * time.Second)
	c.Agents[2].Start()
	c.AwaitReady(45 * time.Second)
	testkit.Eventually(t, 30*time.Second, func() error { return allAlive(c.Agents, peers) })
}
