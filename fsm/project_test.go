package fsm

import (
	"bytes"
	"testing"
)

// A server carries the project and user that asked for it, through a
// snapshot too, and its placement claim is theirs; without them (static
// tokens) both are DefaultProject.
func TestServerProjectAndClaimConsumer(t *testing.T) {
	a := bareMetalFixture(t)
	s := a.ok(&CreateServer{Meta: at(2), ID: sid(1), Name: "x", FlavorID: "bm", ImageRef: "img",
		Host: "h1", Claim: goldClaim(3), ProjectID: "demo-a", UserID: "alice"}).(Server)
	if s.ProjectID != "demo-a" || s.UserID != "alice" || s.Project() != "demo-a" || s.User() != "alice" {
		t.Fatalf("server %+v: want project demo-a, user alice", s)
	}
	legacy := a.ok(&CreateServer{Meta: at(3), ID: sid(2), Name: "y", FlavorID: "bm", ImageRef: "img",
		Host: "h2", Claim: goldClaim(4)}).(Server)
	if legacy.ProjectID != "" || legacy.Project() != DefaultProject || legacy.User() != DefaultProject {
		t.Fatalf("server without a project: %+v, project %q", legacy, legacy.Project())
	}
	p := a.s.Placement()
	for id, want := range map[string][2]string{sid(1): {"demo-a", "alice"}, sid(2): {DefaultProject, DefaultProject}} {
		c, ok := p.Allocations(id)
		if !ok || c.ProjectID != want[0] || c.UserID != want[1] {
			t.Errorf("claim of %s: %+v (found %v), want consumer project %s, user %s", id, c, ok, want[0], want[1])
		}
	}
	var buf bytes.Buffer
	if _, err := a.s.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	r := New()
	if err := r.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Server(sid(1)); err != nil || got.ProjectID != "demo-a" || got.UserID != "alice" {
		t.Fatalf("after a snapshot: %+v, %v", got, err)
	}
	if r.Digest() != a.s.Digest() {
		t.Fatal("the restored state differs")
	}
	long := make([]byte, maxServerNameLen+1)
	for i := range long {
		long[i] = 'p'
	}
	before := a.s.Digest()
	if r := a.apply(&CreateServer{Meta: at(4), ID: sid(3), Name: "z", FlavorID: "bm", ImageRef: "img",
		Host: "h1", Claim: goldClaim(5), ProjectID: string(long)}); r.Err == nil || a.s.Digest() != before {
		t.Fatalf("an over-long project id: %v, state changed %v", r.Err, a.s.Digest() != before)
	}
}
