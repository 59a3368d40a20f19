package ironic

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/ironic/sim"
)

// listOrder runs the sorted listings a node sync relies on against an
// Ironic (the simulator, or a real one) and checks Ironic's semantics:
// updated_at is null until a node's first change and every change bumps
// it (traits included); a listing by updated_at, newest first, pages with
// the last node as marker and drops the never-updated nodes after a
// marker that has a timestamp, and after a marker without one returns
// only the nodes of lower id; created_at is never null. Only the nodes
// this test creates are looked at (a real Ironic may hold others).
func listOrder(t *testing.T, c *Client, base string) {
	ctx := pvCtx(t, 60*time.Second)
	rc := pvPrefix(t)
	var ids []string // a, b, cc, d, in creation (id) order
	for range 4 {
		n, err := c.CreateNode(ctx, NodeSpec{UUID: uuid.NewString(), Driver: "fake-hardware", ResourceClass: rc})
		pvNoErr(t, err)
		ids = append(ids, n.UUID)
		t.Cleanup(func() { _ = c.DeleteNode(context.Background(), n.UUID) })
		// Distinct created_at even on a coarse clock.
		time.Sleep(2 * time.Millisecond) // spacing timestamps, not waiting for a state
	}
	a, b, cc, d := ids[0], ids[1], ids[2], ids[3]
	mine := func(nodes []Node) []string {
		var out []string
		for _, n := range nodes {
			if slices.Contains(ids, n.UUID) {
				out = append(out, n.UUID)
			}
		}
		return out
	}
	before := time.Now().Add(-time.Minute)
	all, asOf, err := c.ListNodesSorted(ctx, ListOptions{SortKey: SortByCreatedAt, SortDir: SortDesc})
	pvNoErr(t, err)
	if asOf.Before(before) || asOf.After(time.Now().Add(time.Minute)) {
		t.Fatalf("the listing's Date is %v, not about now", asOf)
	}
	for _, n := range all {
		if slices.Contains(ids, n.UUID) && (!n.UpdatedAt.IsZero() || n.CreatedAt.IsZero()) {
			t.Fatalf("new node %s: created_at %v, updated_at %v; want a created_at and a null updated_at", n.UUID, n.CreatedAt, n.UpdatedAt)
		}
	}
	if got, want := mine(all), []string{d, cc, b, a}; !slices.Equal(got, want) {
		t.Fatalf("by created_at, newest first: %v, want %v", got, want)
	}

	pvNoErr(t, c.UpdateNode(ctx, b, []PatchOp{{Op: "add", Path: "/extra/touched", Value: "1"}}))
	time.Sleep(2 * time.Millisecond) // spacing timestamps, not waiting for a state
	putTraits(t, base, d, "CUSTOM_LISTED")
	byUpdated := func(marker string) []Node {
		t.Helper()
		nodes, _, err := c.ListNodesSorted(ctx, ListOptions{SortKey: SortByUpdatedAt, SortDir: SortDesc, Limit: 1, Marker: marker})
		pvNoErr(t, err)
		return nodes
	}
	nodes := byUpdated("")
	for _, n := range nodes {
		if n.UUID == d && n.UpdatedAt.IsZero() {
			t.Fatalf("node %s has no updated_at after its traits changed", d)
		}
	}
	// One node per page: after the first marker the null ones are gone;
	// the node changed last comes first.
	if got, want := mine(nodes), []string{d, b}; !slices.Equal(got, want) {
		t.Fatalf("by updated_at, newest first, one per page: %v, want %v (never-updated nodes dropped)", got, want)
	}
	// After a marker whose updated_at is null: only lower ids, by updated_at
	// (b); b is the next marker, so the null a is dropped in turn.
	if got, want := mine(byUpdated(cc)), []string{b}; !slices.Equal(got, want) {
		t.Fatalf("by updated_at after the never-updated %s: %v, want %v", cc, got, want)
	}
	// Until ends the listing at b, which is not returned.
	got, _, err := c.ListNodesSorted(ctx, ListOptions{SortKey: SortByCreatedAt, SortDir: SortDesc, Limit: 1,
		Until: func(n Node) bool { return n.UUID == b }})
	pvNoErr(t, err)
	if want := []string{d, cc}; !slices.Equal(mine(got), want) {
		t.Fatalf("listing until %s: %v, want %v", b, mine(got), want)
	}
}

// putTraits sets a node's traits (PUT /v1/nodes/{id}/traits).
func putTraits(t *testing.T, base, id string, traits ...string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"traits": traits})
	req, err := http.NewRequest(http.MethodPut, strings.TrimSuffix(base, "/")+"/v1/nodes/"+id+"/traits", bytes.NewReader(body))
	pvNoErr(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-OpenStack-Ironic-API-Version", "1.82")
	resp, err := http.DefaultClient.Do(req)
	pvNoErr(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT traits of %s: HTTP %d", id, resp.StatusCode)
	}
}

func TestListNodesSorted(t *testing.T) {
	_, p, url := pvSim(t, sim.Options{})
	c := pvClient(t, url, Options{Logger: pvQuiet})
	listOrder(t, c, url)
	// Until ends the paging: one page of one node read, not the rest.
	before := p.count(http.MethodGet, "/v1/nodes/detail", 200)
	nodes, _, err := c.ListNodesSorted(pvCtx(t, 10*time.Second), ListOptions{SortKey: SortByUpdatedAt, SortDir: SortDesc, Limit: 1,
		Until: func(Node) bool { return true }})
	pvNoErr(t, err)
	if n := p.count(http.MethodGet, "/v1/nodes/detail", 200) - before; len(nodes) != 0 || n != 1 {
		t.Fatalf("a listing stopped at its first node returned %d nodes in %d requests, want 0 in 1", len(nodes), n)
	}
}

// briefMatches checks that ListNodesBrief returns what ListNodes does,
// timestamps aside.
func briefMatches(t *testing.T, c *Client) {
	t.Helper()
	ctx := pvCtx(t, 60*time.Second)
	full, err := c.ListNodes(ctx)
	pvNoErr(t, err)
	brief, asOf, err := c.ListNodesBrief(ctx)
	pvNoErr(t, err)
	if asOf.IsZero() || len(brief) != len(full) {
		t.Fatalf("brief listing: %d nodes (full: %d), asOf %v", len(brief), len(full), asOf)
	}
	for i := range full {
		f, b := full[i], brief[i]
		f.CreatedAt, f.UpdatedAt, f.ProvisionUpdatedAt = time.Time{}, time.Time{}, time.Time{}
		if !reflect.DeepEqual(f, b) {
			t.Fatalf("node %d:\nbrief %+v\nfull  %+v", i, b, f)
		}
	}
}

func TestListNodesBrief(t *testing.T) {
	s, p, url := pvSim(t, sim.Options{})
	ids := s.SeedNodes(7, "gold", "CUSTOM_X")
	c := pvClient(t, url, Options{Logger: pvQuiet, pageSize: 3})
	ctx := pvCtx(t, 10*time.Second)
	a, err := c.CreateAllocation(ctx, AllocationRequest{Name: "brief", ResourceClass: "gold", CandidateNodes: []string{ids[2]}})
	pvNoErr(t, err)
	if _, err := c.WaitAllocation(ctx, a.UUID); err != nil {
		t.Fatal(err)
	}
	pvNoErr(t, c.ReserveNode(ctx, ids[4], "0b7c6a52-50a3-4bd6-a6d5-1fa1b8d3b0d1"))
	before := p.count(http.MethodGet, "/v1/nodes/detail", 0)
	briefMatches(t, c)
	if n := p.count(http.MethodGet, "/v1/nodes/detail", 0) - before; n != 3 {
		t.Fatalf("%d detail requests: the brief listing read details too", n-3)
	}
	nodes, _, err := c.ListNodesBrief(ctx)
	pvNoErr(t, err)
	if nodes[2].AllocationUUID != a.UUID || nodes[4].AllocationUUID != "" || nodes[4].InstanceUUID == "" {
		t.Fatalf("allocations joined wrong: %+v / %+v", nodes[2], nodes[4])
	}
}

func TestListNodesSortedRealIronic(t *testing.T) {
	u := os.Getenv("IRONIC_URL")
	if u == "" {
		t.Skip("IRONIC_URL not set: export IRONIC_URL=$(scripts/ironic-up.sh)")
	}
	c := pvClient(t, u, Options{Logger: pvQuiet})
	listOrder(t, c, u)
	briefMatches(t, c)
}
