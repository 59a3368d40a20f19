package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/testkit"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
)

func computeClient(a *Agent) *gophercloud.ServiceClient {
	pc := &gophercloud.ProviderClient{HTTPClient: http.Client{Timeout: 20 * time.Second}}
	pc.SetToken(a.c.Token)
	url := a.URL() + "/compute/v2.1/"
	return &gophercloud.ServiceClient{ProviderClient: pc, Endpoint: url, ResourceBase: url}
}

func createFlavor(t *testing.T, a *Agent, name string) *flavors.Flavor {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	disk := 10
	f, err := flavors.Create(ctx, computeClient(a), flavors.CreateOpts{Name: name, VCPUs: 2, RAM: 2048, Disk: &disk}).Extract()
	if err != nil {
		t.Fatalf("create flavor %s through %s: %v", name, a.Name, err)
	}
	return f
}

// TestRealAgentsSurviveLeaderKill runs three real agents on 127.0.0.2-4,
// writes through a follower, SIGKILLs the leader, writes again through a
// survivor, and checks the restarted peer catches up.
func TestRealAgentsSurviveLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	c := Start(t, 3, Options{})
	c.AwaitReady(30 * time.Second)
	leader := c.Leader(10 * time.Second)
	var follower *Agent
	for _, a := range c.Agents {
		if a != leader {
			follower = a
			break
		}
	}
	f1 := createFlavor(t, follower, "before-kill")
	if f1.VCPUs != 2 || f1.RAM != 2048 || f1.Disk != 10 {
		t.Fatalf("created flavor %+v", f1)
	}

	killedAt := time.Now()
	leader.Kill()
	newLeader := c.Leader(15 * time.Second)
	t.Logf("new leader %s elected %s after SIGKILL of %s", newLeader.Name, time.Since(killedAt).Round(time.Millisecond), leader.Name)
	var survivor *Agent
	for _, a := range c.Agents {
		if a != leader && a != newLeader {
			survivor = a
		}
	}
	f2 := createFlavor(t, survivor, "after-kill")
	for _, a := range []*Agent{survivor, newLeader} {
		for _, id := range []string{f1.ID, f2.ID} {
			var got map[string]any
			if err := a.Client().Do(context.Background(), http.MethodGet,
				"/compute/v2.1/flavors/"+id+"?consistency=linearizable", nil, &got); err != nil {
				t.Fatalf("linearizable read of %s on %s: %v", id, a.Name, err)
			}
		}
	}

	leader.Start()
	testkit.Eventually(t, 30*time.Second, func() error {
		var got map[string]any
		return leader.Client().Do(context.Background(), http.MethodGet,
			"/compute/v2.1/flavors/"+f2.ID+"?consistency=stale", nil, &got)
	})
	c.AwaitReady(30 * time.Second)

	// The CLI drives a clean leave: the peer exits and is removed from raft.
	out, err := exec.Command(c.Bin, "leave", "--addr", survivor.URL(), "--token", c.Token).CombinedOutput()
	if err != nil {
		t.Fatalf("corral leave: %v\n%s", err, out)
	}
	if !survivor.Wait(30 * time.Second) {
		t.Fatalf("%s did not exit after leave", survivor.Name)
	}
	testkit.Eventually(t, 20*time.Second, func() error {
		st, err := c.Leader(10 * time.Second).Raft(context.Background())
		if err != nil {
			return err
		}
		if len(st.Voters) != 2 {
			return fmt.Errorf("voters after leave: %v", st.Voters)
		}
		return nil
	})
	var hosts struct {
		Hosts []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"hosts"`
	}
	if err := newLeader.Client().Do(context.Background(), http.MethodGet, "/v1/hosts", nil, &hosts); err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts.Hosts {
		if h.Name == survivor.Name && h.Status != "left" {
			t.Fatalf("host %s is %s after leave, want left", h.Name, h.Status)
		}
	}
}

// TestAgentRejectsBadConfig checks start-up validation reports problems clearly.
func TestAgentRejectsBadConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := Binary(t)
	dir := t.TempDir()
	conf := dir + "/corral.conf"
	if err := os.WriteFile(conf, []byte("[raft]\nheartbeat_timout = 1s\nport = 99999\n[auth]\nadmin_tokens = short\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "agent", "--config", conf, "--data-dir", dir, "--bind", "not-an-ip").CombinedOutput()
	if err == nil {
		t.Fatalf("agent started with a bad config:\n%s", out)
	}
	for _, want := range []string{"heartbeat_timout", "did you mean heartbeat_timeout", "out of range", "too short", "not an IP address"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("start-up error lacks %q:\n%s", want, out)
		}
	}
}
