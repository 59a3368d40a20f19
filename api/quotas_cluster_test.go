package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/corral-dev/corral/testkit"
)

// Quotas are counted in the replicated state: a boot over quota through a
// follower gets Nova's 403 as the leader would answer it, and every peer
// reports the same limits and usage.
func TestQuotaThroughFollowers(t *testing.T) {
	h := startCluster(t, 3)
	leader := h.Leader(15 * time.Second)
	var peers []*httptest.Server
	var fol *httptest.Server
	for _, p := range h.Running() {
		ts := serve(t, p)
		peers = append(peers, ts)
		if p != leader && fol == nil {
			fol = ts
		}
		testkit.Eventually(t, 15*time.Second, func() error {
			if r := do(t, ts, "GET", "/readyz", "", "", nil); r.code != http.StatusOK {
				return fmt.Errorf("%s readyz: %s", p.Name, r)
			}
			return nil
		})
	}
	if r := do(t, fol, http.MethodPost, computeBase+"/flavors", adminToken,
		`{"flavor": {"name": "q", "id": "q", "ram": 512, "vcpus": 2, "disk": 1}}`, nil); r.code != http.StatusOK {
		t.Fatalf("flavor: %s", r)
	}
	if r := do(t, fol, http.MethodPut, computeBase+"/os-quota-class-sets/default", adminToken,
		`{"quota_class_set": {"instances": 5, "cores": 2}}`, nil); r.code != http.StatusOK {
		t.Fatalf("default class through a follower: %s", r)
	}
	boot := `{"server": {"name": "a", "imageRef": "http://img/a", "flavorRef": "q", "networks": "none"}}`
	if r := do(t, fol, http.MethodPost, computeBase+"/servers", adminToken, boot, nil); r.code != http.StatusAccepted {
		t.Fatalf("first boot: %s", r)
	}
	r := do(t, fol, http.MethodPost, computeBase+"/servers", adminToken, boot, nil)
	wantError(t, "boot over the cores quota through a follower", r, http.StatusForbidden, "forbidden",
		"Quota exceeded for cores: Requested 2, but already used 2 of 2 cores")
	for i, ts := range peers {
		abs := get(t, do(t, ts, http.MethodGet, computeBase+"/limits?consistency=linearizable", adminToken, "", nil).json(t), "limits", "absolute").(map[string]any)
		if abs["maxTotalInstances"] != float64(5) || abs["totalInstancesUsed"] != float64(1) || abs["totalCoresUsed"] != float64(2) {
			t.Errorf("peer %d's limits: %v", i, abs)
		}
	}
}
