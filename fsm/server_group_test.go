package fsm

import (
	"errors"
	"strings"
	"testing"

	"github.com/corral-dev/corral/fsm/sched"
)

func (a *applier) group(id, policy string, maxPerHost int) {
	a.tb.Helper()
	a.ok(&CreateServerGroup{Meta: at(1), Group: ServerGroup{ID: id, Name: "g-" + id, Policy: policy, ProjectID: "p1", UserID: "u1",
		MaxServerPerHost: maxPerHost}})
}

func (a *applier) bootIn(id, group string) Server {
	a.tb.Helper()
	c := &CreateServer{Meta: at(10), ID: id, Name: "s", FlavorID: "bm", ImageRef: "img", Group: group, ProjectID: "p1"}
	a.s.Prepare(c)
	return a.ok(c).(Server)
}

func TestServerGroupCreateDelete(t *testing.T) {
	a := serverFixture(t)
	g := ServerGroup{ID: "g1", Name: "web", Policy: sched.PolicyAffinity, ProjectID: "p1", UserID: "u1"}
	if r := a.apply(&CreateServerGroup{Group: g}); !errors.Is(r.Err, ErrConflict) {
		t.Fatalf("a group before the feature is on: %v", r.Err)
	}
	a.withFeatures()
	before := a.s.Digest()
	for _, bad := range []func(*ServerGroup){
		func(g *ServerGroup) { g.ID = "" },
		func(g *ServerGroup) { g.Name = "" },
		func(g *ServerGroup) { g.Name = strings.Repeat("n", 256) },
		func(g *ServerGroup) { g.Policy = "together" },
		func(g *ServerGroup) { g.MaxServerPerHost = 2 }, // affinity takes no rule
		func(g *ServerGroup) { g.Policy, g.MaxServerPerHost = sched.PolicyAntiAffinity, -1 },
		func(g *ServerGroup) { g.ProjectID = "" },
		func(g *ServerGroup) { g.Members = []string{"s1"} },
	} {
		b := g
		bad(&b)
		if r := a.apply(&CreateServerGroup{Group: b}); !errors.Is(r.Err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", b, r.Err)
		}
	}
	if r := a.apply(&DeleteServerGroup{ID: "g1"}); !errors.Is(r.Err, ErrNotFound) {
		t.Errorf("delete of an unknown group: %v", r.Err)
	}
	if a.s.Digest() != before {
		t.Fatal("refused group commands changed the state")
	}
	a.ok(&CreateServerGroup{Meta: at(2), Group: g})
	if r := a.apply(&CreateServerGroup{Group: g}); !errors.Is(r.Err, ErrConflict) {
		t.Errorf("duplicate: %v", r.Err)
	}
	got, err := a.s.ServerGroup("g1")
	if err != nil || got.Name != "web" || !got.CreatedAt.Equal(t0.Add(2e9)) {
		t.Fatalf("group %+v, %v", got, err)
	}
	a.ok(&DeleteServerGroup{Meta: at(3), ID: "g1"})
	if len(a.s.ServerGroups()) != 0 {
		t.Fatal("deleted group still listed")
	}
}

func TestServerGroupMembersAndSnapshot(t *testing.T) {
	a := bareMetalFixture(t).withFeatures()
	a.group("g1", sched.PolicySoftAffinity, 0)
	before := a.s.Digest()
	if r := a.apply(&CreateServer{ID: sid(9), Name: "s", FlavorID: "bm", ImageRef: "img", Group: "nope"}); !errors.Is(r.Err, ErrInvalid) {
		t.Fatalf("boot into an unknown group: %v", r.Err)
	}
	if a.s.Digest() != before {
		t.Fatal("a refused boot changed the state")
	}
	s1, s2 := a.bootIn(sid(1), "g1"), a.bootIn(sid(2), "g1")
	if s1.Host != s2.Host {
		t.Errorf("soft-affinity members on %s and %s, with room on both", s1.Host, s2.Host)
	}
	if g, _ := a.s.ServerGroup("g1"); strings.Join(g.Members, ",") != sid(1)+","+sid(2) || a.s.GroupOf(sid(2)) != "g1" {
		t.Fatalf("members %v", g.Members)
	}
	b := New()
	if err := b.Restore(snapshotReader(t, a.s)); err != nil {
		t.Fatal(err)
	}
	if b.Digest() != a.s.Digest() || b.GroupOf(sid(1)) != "g1" {
		t.Fatal("the restored groups differ")
	}
	// A deleted member leaves its group; the group's deletion leaves its
	// members alone.
	a.ok(&DeleteServer{Meta: at(20), ID: sid(1)})
	a.ok(&SetServerTask{Meta: at(21), ID: sid(1), Host: s1.Host, Epoch: s1.Epoch, Status: StatusDeleted})
	if g, _ := a.s.ServerGroup("g1"); strings.Join(g.Members, ",") != sid(2) || a.s.GroupOf(sid(1)) != "" {
		t.Fatalf("members after a delete: %v", g.Members)
	}
	a.ok(&DeleteServerGroup{Meta: at(22), ID: "g1"})
	if _, err := a.s.Server(sid(2)); err != nil || a.s.GroupOf(sid(2)) != "" {
		t.Fatalf("member after the group's deletion: %v", err)
	}
}

func TestServerGroupPoliciesPlaceAndMove(t *testing.T) {
	a := bareMetalFixture(t).withFeatures() // Ironic hosts h1 and h2
	a.group("anti", sched.PolicyAntiAffinity, 0)
	a.group("aff", sched.PolicyAffinity, 0)
	x1, x2 := a.bootIn(sid(1), "anti"), a.bootIn(sid(2), "anti")
	if x1.Host == x2.Host || x1.Host == "" || x2.Host == "" {
		t.Fatalf("anti-affinity members on %q and %q", x1.Host, x2.Host)
	}
	// A third member has no host left: ERROR with Nova's no valid host.
	x3 := a.bootIn(sid(3), "anti")
	if x3.Status != StatusError || x3.Host != "" || !strings.Contains(x3.Fault.Message, "anti-affinity policy") {
		t.Fatalf("third anti-affinity member: %+v %+v", x3, x3.Fault)
	}
	y1, y2 := a.bootIn(sid(4), "aff"), a.bootIn(sid(5), "aff")
	if y1.Host != y2.Host {
		t.Fatalf("affinity members on %s and %s", y1.Host, y2.Host)
	}
	// A stale decision (a member placed in between) is refused.
	before := a.s.Digest()
	stale := &CreateServer{Meta: at(11), ID: sid(6), Name: "s", FlavorID: "bm", ImageRef: "img", Group: "anti", Host: x1.Host}
	if r := a.apply(stale); !errors.Is(r.Err, ErrStaleDecision) {
		t.Fatalf("decision against the policy: %v", r.Err)
	}
	if a.s.Digest() != before {
		t.Fatal("a stale decision changed the state")
	}
	// A third host comes; h1 dies. Anti-affinity members stay apart, the
	// affinity members move together.
	a.ok(&RegisterHost{Meta: at(12), Name: "h3", Kind: KindIronic})
	a.ok(&SetHostStatus{Meta: at(13), Name: y1.Host, Status: HostDown})
	re := &ReassignServers{Meta: at(14), From: y1.Host, Reason: ReasonHostDown}
	a.s.Prepare(re)
	a.ok(re)
	host := func(id string) string { s, _ := a.s.Server(id); return s.Host }
	if host(sid(1)) == host(sid(2)) {
		t.Errorf("failover put anti-affinity members together on %s", host(sid(1)))
	}
	if host(sid(4)) != host(sid(5)) || host(sid(4)) == y1.Host {
		t.Errorf("affinity members after the failover: %s, %s", host(sid(4)), host(sid(5)))
	}
}

// The server_groups and server_group_members quotas hold at the group's
// create and at each member's boot, with Nova's messages, and /limits
// counts the groups.
func TestServerGroupQuotas(t *testing.T) {
	a := bareMetalFixture(t).withFeatures()
	a.ok(&SetQuotaDefaults{Meta: at(0), Limits: QuotaLimits{QuotaServerGroups: 2, QuotaServerGroupMembers: 1}})
	a.group("g1", sched.PolicyAntiAffinity, 0)
	a.group("g2", sched.PolicyAntiAffinity, 0)
	r := a.apply(&CreateServerGroup{Meta: at(1), Group: ServerGroup{ID: "g3", Name: "g3", Policy: sched.PolicyAffinity,
		ProjectID: "p1", UserID: "u1"}})
	if !errors.Is(r.Err, ErrQuotaExceeded) || r.Err.Error() != "Quota exceeded, too many server groups." {
		t.Fatalf("a third group over server_groups=2: %v", r.Err)
	}
	if got := a.s.QuotaUsage("p1", "")[QuotaServerGroups]; got != 2 {
		t.Errorf("server groups in use: %d, want 2", got)
	}
	a.ok(&CreateServerGroup{Meta: at(1), Group: ServerGroup{ID: "g9", Name: "g9", Policy: sched.PolicyAffinity,
		ProjectID: "p2", UserID: "u2"}}) // another project counts apart
	a.bootIn(sid(1), "g1")
	before := a.s.Digest()
	c := &CreateServer{Meta: at(11), ID: sid(2), Name: "s", FlavorID: "bm", ImageRef: "img", Group: "g1", ProjectID: "p1"}
	a.s.Prepare(c)
	if r := a.apply(c); !errors.Is(r.Err, ErrQuotaExceeded) || r.Err.Error() != "Quota exceeded, too many servers in group" {
		t.Fatalf("a second member over server_group_members=1: %v", r.Err)
	}
	if a.s.Digest() != before {
		t.Fatal("a refused boot changed the state")
	}
	a.bootIn(sid(3), "g2")
}
