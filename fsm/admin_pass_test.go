package fsm

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// A boot request's admin password is kept for the owner's config drive
// until the build is over, carried by snapshots meanwhile and by no JSON.
func TestAdminPassKeptUntilTheBuildEnds(t *testing.T) {
	a := bareMetalFixture(t)
	set := bootRequest(0, 2, 2)
	set.AdminPass = "s3cret-pass"
	cmd, _ := decideSets(t, a, set)
	a.ok(cmd)
	s, _ := a.s.Server(sid(0))
	if s.AdminPass != "s3cret-pass" {
		t.Fatalf("admin password %q", s.AdminPass)
	}
	if v := snapshotFormat(t, a.s); v != 4 {
		t.Fatalf("format %d", v)
	}
	if b, _ := json.Marshal(s); strings.Contains(string(b), "s3cret") {
		t.Fatalf("the JSON of a server holds its password: %s", b)
	}
	a.ok(&ReserveNode{Meta: at(6), ServerID: s.ID, Host: s.Host, Epoch: s.Epoch, NodeUUID: s.ClaimedNode, AllocationUUID: s.ID})
	a.ok(&SetServerTask{Meta: at(6), ID: s.ID, Host: s.Host, Epoch: s.Epoch, TaskState: TaskSpawning})
	if got, _ := a.s.Server(s.ID); got.AdminPass == "" {
		t.Fatal("the password was forgotten before the deploy")
	}
	a.ok(&SetServerTask{Meta: at(7), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Status: StatusActive})
	if got, _ := a.s.Server(s.ID); got.AdminPass != "" {
		t.Fatal("an active server still holds its password")
	}
	other, _ := a.s.Server(sid(1))
	a.ok(&SetServerTask{Meta: at(7), ID: other.ID, Host: other.Host, Epoch: other.Epoch, Status: StatusError})
	if got, _ := a.s.Server(other.ID); got.AdminPass != "" {
		t.Fatal("a failed build still holds its password")
	}

	// A server without a host is never deployed: it holds none.
	a2 := bareMetalFixture(t)
	big := bootRequest(100, 11, 11)
	big.AdminPass = "p"
	cmd, _ = decideSets(t, a2, big)
	a2.ok(cmd)
	if got, _ := a2.s.Server(sid(100)); got.Host != "" || got.AdminPass != "" {
		t.Fatalf("an unplaced server: host %q, password held %v", got.Host, got.AdminPass != "")
	}
	big = bootRequest(200, 1, 1)
	big.AdminPass = strings.Repeat("p", MaxAdminPassLen+1)
	cmd, _ = decideSets(t, a2, big)
	if r := a2.ok(cmd).(BatchResult); !errors.Is(r[0].Err, ErrInvalid) {
		t.Fatalf("a long password: %v", r[0].Err)
	}
}

// A rebuild's admin password is kept until the owner finishes it.
func TestAdminPassOfARebuild(t *testing.T) {
	a, s := activeServer(t)
	a.ok(&RebuildServer{Meta: at(3), ID: s.ID, ImageRef: "img-2", AdminPass: "rebuilt-pass"})
	got, _ := a.s.Server(s.ID)
	if got.AdminPass != "rebuilt-pass" {
		t.Fatalf("rebuild password %q", got.AdminPass)
	}
	a.ok(&SetServerTask{Meta: at(4), ID: s.ID, Host: got.Host, Epoch: got.Epoch, Status: StatusActive, TaskState: TaskRebuilding})
	if got, _ := a.s.Server(s.ID); got.AdminPass == "" {
		t.Fatal("a report during the rebuild forgot the password")
	}
	a.ok(&FinishServerAction{Meta: at(5), ID: s.ID, Host: got.Host, Epoch: got.Epoch, Kind: ActionRebuild})
	if got, _ := a.s.Server(s.ID); got.AdminPass != "" {
		t.Fatal("a finished rebuild still holds its password")
	}
}
