package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"

	"github.com/corral-dev/corral/testkit"
)

func TestWritesThroughFollowerAPI(t *testing.T) {
	t.Parallel()
	h := startCluster(t, 3)
	leader := h.Leader(15 * time.Second)
	servers := map[string]*httptest.Server{}
	for _, p := range h.Running() {
		servers[p.Name] = serve(t, p)
	}
	fol := h.Followers(leader)[0]
	fts := servers[fol.Name]

	// Every peer is ready: it knows the leader and has applied what it committed.
	for name, ts := range servers {
		testkit.Eventually(t, 15*time.Second, func() error {
			if r := do(t, ts, "GET", "/readyz", "", "", nil); r.code != http.StatusOK {
				return fmt.Errorf("%s readyz: %s", name, r)
			}
			return nil
		})
	}

	r := do(t, fts, "GET", "/v1/cluster/raft", readerToken, "", nil)
	if v := r.json(t); v["leader"] != leader.Name || v["state"] != "follower" || v["name"] != fol.Name {
		t.Errorf("follower's raft status: %s", r.body)
	}
	testkit.Eventually(t, 15*time.Second, func() error {
		r := do(t, fts, "GET", "/v1/cluster/members", readerToken, "", nil)
		ms := get(t, r.json(t), "members").([]any)
		leaders := 0
		for _, m := range ms {
			if get(t, m, "status") != "alive" || get(t, m, "raft", "suffrage") != "voter" {
				return fmt.Errorf("member not an alive voter: %v", m)
			}
			if get(t, m, "raft", "leader") == true {
				leaders++
				if get(t, m, "name") != leader.Name {
					return fmt.Errorf("member %v is marked leader, want %s", get(t, m, "name"), leader.Name)
				}
			}
		}
		if len(ms) != 3 || leaders != 1 {
			return fmt.Errorf("%d members, %d leaders: %s", len(ms), leaders, r.body)
		}
		return nil
	})

	ctx := context.Background()
	cl := computeClient(fts, adminToken)
	created, err := flavors.Create(ctx, cl, flavors.CreateOpts{ID: "via-follower", Name: "via follower",
		RAM: 4096, VCPUs: 4, Disk: ptr(40)}).Extract()
	if err != nil {
		t.Fatalf("create through follower %s: %v", fol.Name, err)
	}
	if created.ID != "via-follower" || created.RAM != 4096 {
		t.Fatalf("created %+v", created)
	}
	// The follower reads its own write without asking for consistency.
	if _, err := flavors.Get(ctx, cl, "via-follower").Extract(); err != nil {
		t.Fatalf("follower does not read its own write: %v", err)
	}
	if _, err := flavors.CreateExtraSpecs(ctx, cl, "via-follower", flavors.ExtraSpecsOpts{"resources:CUSTOM_GOLD": "1"}).Extract(); err != nil {
		t.Fatalf("extra specs through follower: %v", err)
	}
	for name, ts := range servers {
		r := do(t, ts, "GET", computeBase+"/flavors/via-follower?consistency=linearizable", readerToken, "", mv("2.61"))
		if r.code != http.StatusOK {
			t.Fatalf("linearizable read on %s: %s", name, r)
		}
		f := get(t, r.json(t), "flavor")
		if get(t, f, "name") != "via follower" || get(t, f, "extra_specs", "resources:CUSTOM_GOLD") != "1" {
			t.Errorf("linearizable read on %s: %s", name, r.body)
		}
	}

	// A business error crosses the forwarding hop with its status.
	r = do(t, fts, "POST", computeBase+"/flavors", adminToken, `{"flavor": {"id": "via-follower", "name": "other", "ram": 1, "vcpus": 1, "disk": 0}}`, nil)
	if r.code != http.StatusConflict {
		t.Errorf("duplicate through follower: got %s, want 409", r)
	}

	if err := flavors.Delete(ctx, cl, "via-follower").ExtractErr(); err != nil {
		t.Fatalf("delete through follower: %v", err)
	}
	for name, ts := range servers {
		r := do(t, ts, "GET", computeBase+"/flavors/via-follower?consistency=linearizable", readerToken, "", nil)
		if r.code != http.StatusNotFound {
			t.Errorf("linearizable read on %s after delete: got %s, want 404", name, r)
		}
	}

	testkit.Eventually(t, 10*time.Second, func() error {
		want := leader.Node.Store().Digest()
		for _, p := range h.Running() {
			if d := p.Node.Store().Digest(); d != want {
				return fmt.Errorf("%s digest %s differs from the leader's %s", p.Name, d[:12], want[:12])
			}
		}
		return nil
	})
}
