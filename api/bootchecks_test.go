package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/corral-dev/corral/fsm"
)

// A boot's checks that read this peer's replica (a private flavor's
// access, an image's minimums against the flavor) read it after a default
// read barrier, so that they see the leader's state: here the flavor this
// replica holds was deleted and made again, private or smaller, through
// another peer.
func TestBootChecksReadTheLeadersState(t *testing.T) {
	l := newLaggingCluster(false)
	ts, withGlance := serveLagging(t, l, false), serveLagging(t, l, true)
	for _, f := range []string{"f", "small"} {
		if r := do(t, ts, http.MethodPost, computeBase+"/flavors", adminToken,
			`{"flavor": {"id": "`+f+`", "name": "`+f+`", "ram": 1, "vcpus": 1, "disk": 5}}`, nil); r.code != http.StatusOK {
			t.Fatalf("create flavor %s: %s", f, r)
		}
	}
	l.catchUp()
	// Through another peer: f is now private to p2, small's disk 1 GB.
	for _, cmd := range []fsm.Command{&fsm.DeleteFlavor{ID: "f"}, &fsm.DeleteFlavor{ID: "small"},
		&fsm.CreateFlavor{Flavor: fsm.Flavor{ID: "f", Name: "f", RAM: 1, VCPUs: 1, Disk: 5, RxTxFactor: 1, Access: []string{"p2"}}},
		&fsm.CreateFlavor{Flavor: fsm.Flavor{ID: "small", Name: "small", RAM: 1, VCPUs: 1, Disk: 1, RxTxFactor: 1, IsPublic: true}}} {
		if _, err := l.ProposeCommitted(context.Background(), cmd); err != nil {
			t.Fatalf("%s: %v", cmd.Type(), err)
		}
	}
	boot := func(token, image, flavor string) response {
		ts := ts
		if image != "img" {
			ts = withGlance
		}
		return do(t, ts, http.MethodPost, computeBase+"/servers", token,
			`{"server": {"name": "a", "imageRef": "`+image+`", "flavorRef": "`+flavor+`", "networks": "none"}}`, mv("2.37"))
	}
	if r := boot(memberP1, "img", "f"); r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "is private") {
		t.Errorf("p1 boots with a flavor private to p2 that this replica holds as public: %s", r)
	}
	if r := boot(adminToken, bigDiskImage, "small"); r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "smaller than the minimum size") {
		t.Errorf("boot of an image needing 2 GB of disk with a flavor of 1 GB that this replica holds at 5 GB: %s", r)
	}
	if r := boot(memberP2, "img", "f"); r.code != http.StatusAccepted {
		t.Errorf("p2 boots with its private flavor: %s", r)
	}
}
