package fsm

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// bootRequest is a boot request for n servers ids from..from+n-1 of the
// bare-metal fixture's flavor.
func bootRequest(from, n, minCount int) ServerSet {
	set := ServerSet{ReservationID: fmt.Sprintf("r-%08d", from), MinCount: minCount,
		Server: CreateServer{Meta: Meta{RequestID: "req-boot"}, Name: "web", FlavorID: "bm", ImageRef: "img",
			Metadata: map[string]string{"role": "web"}, ProjectID: "p1", UserID: "u1"},
		Fields: ServerFields{Description: ptr("front end"), AccessIPv4: "192.0.2.1", Tags: []string{"web", "blue"}}}
	for i := range n {
		set.Members = append(set.Members, SetMember{ID: sid(from + i)})
	}
	return set
}

func decideSets(t *testing.T, a *applier, sets ...ServerSet) (*CreateServerSets, []bool) {
	t.Helper()
	d, ok := a.s.Schedule(&CreateServerSets{Meta: at(5), Sets: sets}, nil)
	if !ok {
		t.Fatal("a CreateServerSets carries no decision")
	}
	return d.Command.(*CreateServerSets), d.NoCandidate
}

// One request creates its servers together, named and numbered as Nova
// names them, under one reservation id, on distinct nodes.
func TestServerSetCreatesItsServers(t *testing.T) {
	a := bareMetalFixture(t)
	cmd, starved := decideSets(t, a, bootRequest(0, 3, 3))
	if starved[0] {
		t.Fatal("three servers for ten nodes starved")
	}
	res := a.ok(cmd).(BatchResult)
	if len(res) != 1 || res[0].Err != nil {
		t.Fatalf("results %+v", res)
	}
	created := res[0].Value.([]Server)
	nodes := map[string]bool{}
	for i, s := range created {
		want := fmt.Sprintf("web-%d", i+1)
		if s.ID != sid(i) || s.Name != want || s.Hostname() != want || s.LaunchIndex != i || s.ReservationID != "r-00000000" ||
			s.Status != StatusBuild || s.Description == nil || *s.Description != "front end" || s.AccessIPv4 != "192.0.2.1" ||
			!reflect.DeepEqual(s.Tags, []string{"blue", "web"}) || s.Metadata["role"] != "web" || s.RequestID != "req-boot" ||
			!s.CreatedAt.Equal(at(5).At) || s.Project() != "p1" {
			t.Fatalf("server %d: %+v", i, s)
		}
		if nodes[s.ClaimedNode] {
			t.Fatalf("node %s given twice", s.ClaimedNode)
		}
		nodes[s.ClaimedNode] = true
		if stored, err := a.s.Server(s.ID); err != nil || !reflect.DeepEqual(stored, s) {
			t.Fatalf("stored %+v, %v", stored, err)
		}
	}
	if v := snapshotFormat(t, a.s); v != 4 {
		t.Fatalf("servers of a boot request are written in format %d, want 4", v)
	}

	// One server alone keeps its name.
	cmd, _ = decideSets(t, a, bootRequest(10, 1, 1))
	if s := a.ok(cmd).(BatchResult)[0].Value.([]Server)[0]; s.Name != "web" || s.LaunchIndex != 0 {
		t.Fatalf("a single server: %+v", s)
	}
}

// A request keeps the servers placed when they are at least min_count, and
// is given up whole otherwise: its servers are all recorded in ERROR, and
// what it had placed goes to the requests decided after it.
func TestServerSetAllOrNothingByMinCount(t *testing.T) {
	a := bareMetalFixture(t)
	cmd, starved := decideSets(t, a, bootRequest(0, 12, 11), bootRequest(20, 12, 5))
	if !starved[0] || !starved[1] {
		t.Fatalf("twelve servers for ten nodes: starved %v", starved)
	}
	given := cmd.Sets[0]
	if len(given.Members) != 12 {
		t.Fatalf("a request given up keeps its %d servers, got %d", 12, len(given.Members))
	}
	for _, m := range given.Members {
		if m.Host != "" || m.Claim != nil || m.NoValidHost != notEnoughHosts {
			t.Fatalf("a server of a request given up: %+v", m)
		}
	}
	if kept := cmd.Sets[1]; len(kept.Members) != 10 {
		t.Fatalf("the second request placed %d servers, want the ten nodes the first gave back", len(kept.Members))
	}
	res := a.ok(cmd).(BatchResult)
	if res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("results %+v", res)
	}
	for i, s := range res[0].Value.([]Server) {
		if s.Status != StatusError || s.Fault == nil || s.Fault.Message != notEnoughHosts || s.Host != "" || s.Name != fmt.Sprintf("web-%d", i+1) {
			t.Fatalf("server %d of the request given up: %+v", i, s)
		}
	}
	for i, s := range res[1].Value.([]Server) {
		if s.Status != StatusBuild || s.Name != fmt.Sprintf("web-%d", i+1) || s.LaunchIndex != i {
			t.Fatalf("server %d of the request kept: %+v", i, s)
		}
	}
	if _, err := a.s.Server(sid(30)); err == nil {
		t.Fatal("a server the leader dropped was created")
	}
}

// Apply creates a request's servers all together or refuses them all, the
// state untouched.
func TestApplyServerSetRefusesWhole(t *testing.T) {
	a := bareMetalFixture(t)
	cmd, _ := decideSets(t, a, bootRequest(0, 2, 2))
	first := cmd.Sets[0]
	a.ok(cmd)

	mutate := func(f func(*ServerSet)) *CreateServerSets {
		set := bootRequest(10, 2, 2)
		d, _ := decideSets(t, a, set)
		s := d.Sets[0]
		s.Members = append([]SetMember(nil), s.Members...)
		f(&s)
		return &CreateServerSets{Meta: at(6), Sets: []ServerSet{s}}
	}
	setErr := func(c *CreateServerSets) error {
		r := a.apply(c)
		if r.Err != nil {
			return r.Err
		}
		return r.Value.(BatchResult)[0].Err
	}
	before := a.s.Digest()
	for _, tc := range []struct {
		name string
		c    *CreateServerSets
		want error
	}{
		{"a node taken meanwhile", mutate(func(s *ServerSet) {
			s.Members[1].Claim = first.Members[0].Claim
			s.Members[1].Host = first.Members[0].Host
		}), ErrStaleDecision},
		{"a duplicate id", mutate(func(s *ServerSet) { s.Members[1].ID = s.Members[0].ID }), ErrConflict},
		{"an id that exists", mutate(func(s *ServerSet) { s.Members[1].ID = sid(0) }), ErrConflict},
		{"placed in part", mutate(func(s *ServerSet) { s.Members[1].Host, s.Members[1].Claim = "", nil }), ErrInvalid},
		{"min_count above the servers", mutate(func(s *ServerSet) { s.MinCount = 3 }), ErrInvalid},
		{"min_count 0", mutate(func(s *ServerSet) { s.MinCount = 0 }), ErrInvalid},
		{"a template naming a server", mutate(func(s *ServerSet) { s.Server.ID = sid(99) }), ErrInvalid},
		{"a bad tag", mutate(func(s *ServerSet) { s.Fields.Tags = []string{"a/b"} }), ErrInvalid},
		{"a bad address", mutate(func(s *ServerSet) { s.Fields.AccessIPv4 = "::1" }), ErrInvalid},
		{"a bad description", mutate(func(s *ServerSet) { s.Fields.Description = ptr("\x00") }), ErrInvalid},
		{"a bad metadata key", mutate(func(s *ServerSet) { s.Server.Metadata = map[string]string{"a/b": "v"} }), ErrInvalid},
		{"a long name", mutate(func(s *ServerSet) { s.Server.Name = strings.Repeat("n", maxServerNameLen-1) }), ErrInvalid},
		{"a long reservation id", mutate(func(s *ServerSet) { s.ReservationID = strings.Repeat("r", MaxReservationIDLen+1) }), ErrInvalid},
		{"an unknown flavor", mutate(func(s *ServerSet) { s.Server.FlavorID = "nope" }), ErrInvalid},
		{"too many metadata items", mutate(func(s *ServerSet) {
			s.Server.Metadata = map[string]string{}
			for i := range DefaultMetadataItems + 1 {
				s.Server.Metadata[fmt.Sprint(i)] = "v"
			}
		}), ErrQuotaExceeded},
	} {
		if err := setErr(tc.c); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	for _, c := range []*CreateServerSets{{Meta: at(6)}, {Meta: at(6), Sets: make([]ServerSet, MaxCreateBatch+1)},
		{Meta: at(6), Sets: []ServerSet{{MinCount: 1, Members: make([]SetMember, MaxSetServers+1)}}}} {
		if r := a.apply(c); !errors.Is(r.Err, ErrInvalid) {
			t.Errorf("entry of %d requests: %v, want ErrInvalid", len(c.Sets), r.Err)
		}
	}
	if a.s.Digest() != before {
		t.Fatal("refused requests changed the state")
	}
	// A request refused does not refuse the next one of the entry.
	bad := mutate(func(s *ServerSet) { s.Members[1].ID = s.Members[0].ID })
	good, _ := decideSets(t, a, bootRequest(20, 1, 1))
	res := a.ok(&CreateServerSets{Meta: at(7), Sets: []ServerSet{bad.Sets[0], good.Sets[0]}}).(BatchResult)
	if !errors.Is(res[0].Err, ErrConflict) || res[1].Err != nil {
		t.Fatalf("results %+v", res)
	}
}

// A boot request is held to the project's instances quota as Nova's
// multiple create is: refused whole (Nova's 403) when fewer than min_count
// fit, else as many servers as fit up to max_count, the first members.
func TestServerSetWithinQuota(t *testing.T) {
	a := bareMetalFixture(t)
	a.ok(&SetQuotaDefaults{Meta: at(0), Limits: QuotaLimits{QuotaInstances: 3}})
	cmd, _ := decideSets(t, a, bootRequest(0, 5, 4))
	before := a.s.Digest()
	res := a.ok(cmd).(BatchResult)
	if len(res) != 1 || !errors.Is(res[0].Err, ErrQuotaExceeded) ||
		!strings.HasPrefix(res[0].Err.Error(), "Quota exceeded for instances: Requested 4-5, but already used 0 of 3 instances") {
		t.Fatalf("min_count 4 over a quota of 3: %+v", res)
	}
	if a.s.Digest() != before {
		t.Fatal("a refused boot request changed the state")
	}
	cmd, _ = decideSets(t, a, bootRequest(10, 5, 2))
	res = a.ok(cmd).(BatchResult)
	if len(res) != 1 || res[0].Err != nil {
		t.Fatalf("min_count 2, max_count 5 within a quota of 3: %+v", res)
	}
	created := res[0].Value.([]Server)
	if len(created) != 3 || created[0].ID != sid(10) || created[2].ID != sid(12) {
		t.Fatalf("created %d servers (%v), want the first 3", len(created), created)
	}
	if got := a.s.QuotaUsage("p1", "")[QuotaInstances]; got != 3 {
		t.Errorf("instances in use: %d, want 3", got)
	}
}
