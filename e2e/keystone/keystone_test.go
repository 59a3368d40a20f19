package keystone

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

// TestKeystoneCloud: three agents with Keystone on, against the real Keystone and the
// Keystone-protected Ironic. Alice (member of demo-a) boots, lists, shows and deletes her servers
// with her Keystone token, and Ironic really builds them; bob (demo-b) sees none of them and cannot
// delete them; carol (reader of demo-a) sees them and cannot change them; alice may not create
// flavors or drain hosts; the admin sees every project with all_tenants. A revoked token stops
// working within token_cache_time, a Keystone outage serves cached tokens and answers new ones 503,
// bad tokens are 401 with nothing written, and a killed owner's server is re-owned and still alice's.
func TestKeystoneCloud(t *testing.T) {
	cl := realCloud(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ir := cl.ironic(t)
	class := ir.Class("gold")
	nodeIDs := ir.EnrollNodes(t, 4, class)
	g := newGate(t, cl.authURL)
	c := cl.start(t, 3, g)
	e2e.AwaitNodes(t, c.Agents[0], nodeIDs, 60*time.Second)
	alice, bob, carol, admin := cl.login(t, "ALICE"), cl.login(t, "BOB"), cl.login(t, "CAROL"), cl.login(t, "OS")
	a0, a1, a2 := c.Agents[0], c.Agents[1], c.Agents[2]

	// Ironic refuses calls without a token: corral's builds below go through Keystone.
	if code, _, _ := raw(t, "GET", cl.ironicURL+"/v1/nodes", nil, ""); code != http.StatusUnauthorized {
		t.Fatalf("Ironic answers an unauthenticated GET /v1/nodes with %d, want 401", code)
	}

	// Flavors: the admin creates one; alice may read it but not create one.
	disk := 100
	f, err := flavors.Create(ctx, compute(a1, admin.token), flavors.CreateOpts{Name: "bm-gold-ks", VCPUs: 8, RAM: 16384, Disk: &disk}).Extract()
	if err != nil {
		t.Fatalf("the Keystone admin creates a flavor: %v", err)
	}
	if _, err := flavors.CreateExtraSpecs(ctx, compute(a1, admin.token), f.ID, flavors.ExtraSpecsOpts{
		"resources:" + fsm.NormalizeResourceClass(class): "1",
		"resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}).Extract(); err != nil {
		t.Fatalf("extra specs: %v", err)
	}
	if _, err := flavors.Get(ctx, compute(a2, alice.token), f.ID).Extract(); err != nil {
		t.Errorf("alice reads the flavor: %v", err)
	}
	_, err = flavors.Create(ctx, compute(a0, alice.token), flavors.CreateOpts{Name: "mine", VCPUs: 1, RAM: 1, Disk: &disk}).Extract()
	wantCode(t, "alice creates a flavor", err, http.StatusForbidden)
	hdr := http.Header{"X-Auth-Token": {alice.token}}
	if code, _, body := raw(t, "POST", a0.URL()+"/v1/hosts/"+a1.Name+"/drain", hdr, ""); code != http.StatusForbidden {
		t.Errorf("alice drains a host: %d %s, want 403", code, body)
	}

	// Alice boots two servers through two agents; Ironic builds them.
	var mine []string
	for i, a := range []*e2e.Agent{a0, a1} {
		id, err := e2e.Boot(ctx, compute(a, alice.token), fmt.Sprintf("alice-%d", i), f.ID)
		if err != nil {
			t.Fatal(err)
		}
		mine = append(mine, id)
	}
	built := e2e.WaitServers(t, compute(a2, alice.token), mine, 120*time.Second, e2e.Settled)
	for _, id := range mine {
		s := built[id]
		if s.Status != "ACTIVE" || s.TenantID != alice.projectID || s.UserID != alice.userID {
			t.Fatalf("alice's server %s: %s, tenant %s, user %s; want ACTIVE, %s, %s (fault %q)", id, s.Status,
				s.TenantID, s.UserID, alice.projectID, alice.userID, s.Fault.Message)
		}
		if !slices.Contains(nodeIDs, s.HypervisorHostname) {
			t.Fatalf("server %s on %q, not an enrolled node", id, s.HypervisorHostname)
		}
		if a, err := ir.Allocation(ctx, id); err != nil || a == nil || a.NodeUUID != s.HypervisorHostname {
			t.Fatalf("Ironic's allocation of %s: %+v, %v", id, a, err)
		}
	}
	if got := listIDs(ctx, t, compute(a0, alice.token), nil); !slices.Equal(got, sorted(mine)) {
		t.Errorf("alice lists %v, want %v", got, sorted(mine))
	}
	if got := listIDs(ctx, t, compute(a1, carol.token), nil); !slices.Equal(got, sorted(mine)) {
		t.Errorf("carol (reader of demo-a) lists %v, want %v", got, sorted(mine))
	}

	// Bob sees none of alice's servers and cannot delete them; his own is his.
	bobs, err := e2e.Boot(ctx, compute(a2, bob.token), "bob-0", f.ID)
	if err != nil {
		t.Fatal(err)
	}
	e2e.WaitServers(t, compute(a2, bob.token), []string{bobs}, 120*time.Second, e2e.Settled)
	if got := listIDs(ctx, t, compute(a0, bob.token), nil); !slices.Equal(got, []string{bobs}) {
		t.Errorf("bob lists %v, want only %s", got, bobs)
	}
	before := listIDs(ctx, t, compute(a0, admin.token), servers.ListOpts{AllTenants: true})
	_, err = servers.Get(ctx, compute(a1, bob.token), mine[0]).Extract()
	wantCode(t, "bob shows alice's server", err, http.StatusNotFound)
	wantCode(t, "bob deletes alice's server", servers.Delete(ctx, compute(a1, bob.token), mine[0]).ExtractErr(), http.StatusNotFound)
	wantCode(t, "carol deletes alice's server", servers.Delete(ctx, compute(a1, carol.token), mine[0]).ExtractErr(), http.StatusForbidden)
	_, err = servers.List(compute(a0, alice.token), servers.ListOpts{AllTenants: true}).AllPages(ctx)
	wantCode(t, "alice lists every project", err, http.StatusForbidden)

	// The admin sees only its project by default, every project with all_tenants.
	if got := listIDs(ctx, t, compute(a2, admin.token), nil); slices.ContainsFunc(got, func(id string) bool { return id == bobs || slices.Contains(mine, id) }) {
		t.Errorf("the admin lists %v without all_tenants: other projects' servers", got)
	}
	if want := sorted(append([]string{bobs}, mine...)); !slices.Equal(before, want) {
		t.Errorf("the admin lists %v with all_tenants, want %v", before, want)
	}

	// Bad tokens: 401 naming Keystone, nothing written.
	boot := `{"server": {"name": "x", "imageRef": "i", "flavorRef": "` + f.ID + `"}}`
	for _, bad := range []struct {
		name string
		hdr  http.Header
	}{
		{"no token", nil},
		{"a token of another Keystone", http.Header{"X-Auth-Token": {foreignToken()}}},
		{"two X-Auth-Token headers", http.Header{"X-Auth-Token": {alice.token, bob.token}}},
		{"a token with a space in it", http.Header{"X-Auth-Token": {"gAAAAA not a token"}}},
	} {
		code, h, body := raw(t, "POST", a0.URL()+"/compute/v2.1/servers", bad.hdr, boot)
		if code != http.StatusUnauthorized || h.Get("WWW-Authenticate") != `Keystone uri="`+cl.authURL+`"` {
			t.Errorf("%s: %d %q %s, want 401 with WWW-Authenticate naming %s", bad.name, code, h.Get("WWW-Authenticate"), body, cl.authURL)
		}
	}
	if after := listIDs(ctx, t, compute(a0, admin.token), servers.ListOpts{AllTenants: true}); !slices.Equal(after, before) {
		t.Errorf("refused requests changed the servers: %v, was %v", after, before)
	}

	// A revoked token stops working within token_cache_time.
	alice2 := cl.login(t, "ALICE")
	listIDs(ctx, t, compute(a1, alice2.token), nil)
	cl.revoke(t, alice2.token)
	revoked := time.Now()
	testkit.Eventually(t, cacheTime+20*time.Second, func() error {
		_, err := servers.List(compute(a1, alice2.token), nil).AllPages(ctx)
		if gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
			return nil
		}
		return fmt.Errorf("revoked token still answered: %v", err)
	})
	t.Logf("a revoked token refused %s after the revocation (token_cache_time %s)", time.Since(revoked).Round(time.Millisecond), cacheTime)

	// Keystone unreachable: a token validated within the cache time is served, a new one is 503.
	bob2 := cl.login(t, "BOB")
	listIDs(ctx, t, compute(a2, alice.token), nil)
	g.down.Store(true)
	if got := listIDs(ctx, t, compute(a2, alice.token), nil); !slices.Equal(got, sorted(mine)) {
		t.Errorf("alice's cached token with Keystone down lists %v", got)
	}
	code, h, body := raw(t, "GET", a2.URL()+"/compute/v2.1/servers", http.Header{"X-Auth-Token": {bob2.token}}, "")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "Keystone") {
		t.Errorf("a new token with Keystone down: %d %s (Retry-After %q), want 503 naming Keystone", code, body, h.Get("Retry-After"))
	}
	g.down.Store(false)
	if got := listIDs(ctx, t, compute(a2, bob2.token), nil); !slices.Equal(got, []string{bobs}) {
		t.Errorf("bob's new token once Keystone is back lists %v", got)
	}

	// Failover: the owner of alice's first server dies; the server is re-owned and still alice's.
	owner := built[mine[0]].Host
	var dead, alive *e2e.Agent
	for _, a := range c.Agents {
		if a.Name == owner {
			dead = a
		} else if alive == nil {
			alive = a
		}
	}
	if dead == nil {
		t.Fatalf("alice's server is owned by %q, not an agent", owner)
	}
	dead.Kill()
	var moved *servers.Server
	testkit.Eventually(t, 90*time.Second, func() error {
		s, err := servers.Get(ctx, compute(alive, alice.token), mine[0]).Extract()
		if err != nil {
			return err
		}
		if s.Host == owner || s.Status != "ACTIVE" {
			return fmt.Errorf("server %s on %s, %s/%s", s.ID, s.Host, s.Status, s.TaskState)
		}
		moved = s
		return nil
	})
	if moved.TenantID != alice.projectID || moved.UserID != alice.userID {
		t.Errorf("after failover the server is tenant %s, user %s; want alice's", moved.TenantID, moved.UserID)
	}
	_, err = servers.Get(ctx, compute(alive, bob.token), mine[0]).Extract()
	wantCode(t, "bob shows alice's re-owned server", err, http.StatusNotFound)

	// Alice deletes her servers; Ironic releases the nodes.
	for _, id := range mine {
		if err := servers.Delete(ctx, compute(alive, alice.token), id).ExtractErr(); err != nil {
			t.Fatalf("alice deletes %s: %v", id, err)
		}
	}
	e2e.WaitGone(t, compute(alive, alice.token), mine, 120*time.Second)
	testkit.Eventually(t, 60*time.Second, func() error {
		for _, id := range mine {
			if a, err := ir.Allocation(ctx, id); err != nil || a != nil {
				return fmt.Errorf("Ironic still holds allocation %v of %s (%v)", a, id, err)
			}
		}
		return nil
	})
}

func sorted(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// listIDs lists the servers the client's token sees, sorted.
func listIDs(ctx context.Context, t *testing.T, cl *gophercloud.ServiceClient, opts servers.ListOptsBuilder) []string {
	t.Helper()
	pages, err := servers.List(cl, opts).AllPages(ctx)
	if err != nil {
		t.Fatalf("list servers: %v", err)
	}
	all, err := servers.ExtractServers(pages)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range all {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	return ids
}

// wantCode fails the test unless err is an HTTP error with the status.
func wantCode(t *testing.T, what string, err error, code int) {
	t.Helper()
	if !gophercloud.ResponseCodeIs(err, code) {
		var ue gophercloud.ErrUnexpectedResponseCode
		if errors.As(err, &ue) {
			t.Errorf("%s: %d %s, want %d", what, ue.Actual, ue.Body, code)
			return
		}
		t.Errorf("%s: %v, want %d", what, err, code)
	}
}
