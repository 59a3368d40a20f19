package fsm

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// cycle creates, builds and deletes one server on a hypervisor host at
// second sec, and returns its ID.
func cycle(a *applier, i, sec int) string {
	id := fmt.Sprintf("srv-%08d", i)
	a.ok(&CreateServer{Meta: at(sec), ID: id, Name: "s", FlavorID: "f1", ImageRef: "img", Host: "hv"})
	a.ok(&SetServerTask{Meta: at(sec), ID: id, Host: "hv", Epoch: 1, Status: StatusActive})
	a.ok(&DeleteServer{Meta: at(sec), ID: id})
	a.ok(&SetServerTask{Meta: at(sec), ID: id, Host: "hv", Epoch: 1, Status: StatusDeleted})
	return id
}

func cycleStore(t testing.TB) *applier {
	a := newApplier(t)
	a.ok(&RegisterHost{Meta: at(0), Name: "hv", RaftAddr: "a:1", Kind: KindHypervisor})
	a.ok(&CreateFlavor{Meta: at(0), Flavor: testFlavor("f1", "small")})
	return a
}

// 10^4 create/delete cycles leave the state (its snapshot) the same size
// once the leader purges what is past the retention; without purges it
// grows with every cycle.
func TestPurgeKeepsStateFlat(t *testing.T) {
	const cycles, every, retention = 10_000, 1_000, 100 // retention in cycles (one second each)
	purged, kept := cycleStore(t), cycleStore(t)
	var sizes []int
	for i := 1; i <= cycles; i++ {
		cycle(purged, i, i)
		cycle(kept, i, i)
		if i%every != 0 {
			continue
		}
		before := t0.Add(time.Duration(i-retention) * time.Second)
		for {
			ids := purged.s.DeletedBefore(before, MaxPurgeBatch)
			if len(ids) == 0 {
				break
			}
			res := purged.ok(&PurgeServers{Meta: at(i), Before: before, IDs: ids}).(PurgeResult)
			if len(res.Purged) != len(ids) {
				t.Fatalf("purged %d of %d due servers", len(res.Purged), len(ids))
			}
		}
		sizes = append(sizes, len(snapshotBytes(t, purged.s)))
		if got := len(purged.s.Servers()); got != retention {
			t.Fatalf("after %d cycles %d servers are kept, want the %d within the retention", i, got, retention)
		}
	}
	if lo, hi := slices.Min(sizes), slices.Max(sizes); hi-lo > lo/100 {
		t.Fatalf("snapshot bytes after each purge %v: not flat", sizes)
	}
	if grown := len(snapshotBytes(t, kept.s)); grown < 50*sizes[len(sizes)-1] {
		t.Fatalf("without purges the snapshot is %d bytes, with them %d: the test measures nothing", grown, sizes[len(sizes)-1])
	}
	t.Logf("snapshot bytes after each purge: %v; without purges: %d", sizes, len(snapshotBytes(t, kept.s)))
}

// A purge removes only deleted servers updated at or before its time: a
// live one, one deleted later and an unknown ID are skipped.
func TestPurgeSkipsWhatIsNotDue(t *testing.T) {
	a := cycleStore(t)
	old := cycle(a, 1, 10)
	late := cycle(a, 2, 30)
	a.ok(&CreateServer{Meta: at(5), ID: "live", Name: "s", FlavorID: "f1", ImageRef: "img", Host: "hv"})
	before := t0.Add(20 * time.Second)
	if got := a.s.DeletedBefore(before, 0); !slices.Equal(got, []string{old}) {
		t.Fatalf("DeletedBefore = %v, want [%s]", got, old)
	}
	res := a.ok(&PurgeServers{Meta: at(40), Before: before, IDs: []string{late, "live", "nobody", old, old}}).(PurgeResult)
	if !slices.Equal(res.Purged, []string{old}) {
		t.Fatalf("purged %v, want [%s]", res.Purged, old)
	}
	if _, err := a.s.Server(old); !errors.Is(err, ErrNotFound) {
		t.Fatalf("purged server still there: %v", err)
	}
	for _, id := range []string{late, "live"} {
		if _, err := a.s.Server(id); err != nil {
			t.Fatalf("server %s: %v", id, err)
		}
	}
	// The same purge again changes nothing.
	digest := a.s.Digest()
	if res := a.ok(&PurgeServers{Meta: at(41), Before: before, IDs: []string{old}}).(PurgeResult); len(res.Purged) != 0 || a.s.Digest() != digest {
		t.Fatalf("a repeated purge changed the state: %v", res.Purged)
	}
}

func TestPurgeRejectsBadEntries(t *testing.T) {
	a := cycleStore(t)
	cycle(a, 1, 1)
	digest := a.s.Digest()
	big := make([]string, MaxPurgeBatch+1)
	for i := range big {
		big[i] = fmt.Sprint(i)
	}
	for _, c := range []*PurgeServers{{Meta: at(2), IDs: []string{"srv-00000001"}}, {Meta: at(2), Before: t0.Add(time.Hour), IDs: big}} {
		if r := a.apply(c); !errors.Is(r.Err, ErrInvalid) || a.s.Digest() != digest {
			t.Fatalf("purge %v: err %v, state changed %v", c.Before, r.Err, a.s.Digest() != digest)
		}
	}
}
