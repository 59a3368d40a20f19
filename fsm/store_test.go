package fsm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSameLogSameState(t *testing.T) {
	log := genLog(t, 7, 500)
	a, b := New(), New()
	var ok, failed int
	for i, entry := range log {
		index := uint64(i + 1)
		before := a.Digest()
		ra := a.Apply(index, entry)
		rb := b.Apply(index, entry)
		if fmt.Sprint(ra.Err) != fmt.Sprint(rb.Err) || !reflect.DeepEqual(ra.Value, rb.Value) {
			t.Fatalf("index %d: results differ: %+v vs %+v", index, ra, rb)
		}
		if ra.Err != nil {
			failed++
			if !errors.Is(ra.Err, ErrInvalid) && !errors.Is(ra.Err, ErrConflict) && !errors.Is(ra.Err, ErrNotFound) {
				t.Fatalf("index %d: error %v wraps no sentinel", index, ra.Err)
			}
			if after := a.Digest(); after != before {
				t.Fatalf("index %d: failed command %v changed state", index, ra.Err)
			}
		} else {
			ok++
		}
		if a.AppliedIndex() != index {
			t.Fatalf("applied index %d, want %d", a.AppliedIndex(), index)
		}
	}
	if ok < 100 || failed < 100 {
		t.Fatalf("log not mixed enough: %d ok, %d failed", ok, failed)
	}
	if len(a.Flavors()) == 0 || len(a.Hosts()) == 0 {
		t.Fatal("log built no flavors or no hosts")
	}
	assertSameState(t, a, b)
}

func TestSnapshotMidLogThenReplay(t *testing.T) {
	log := genLog(t, 11, 500)
	a := New()
	var snap bytes.Buffer
	for i, entry := range log {
		a.Apply(uint64(i+1), entry)
		if i == 249 {
			if _, err := a.Snapshot().WriteTo(&snap); err != nil {
				t.Fatal(err)
			}
		}
	}
	c := New()
	if err := c.Restore(&snap); err != nil {
		t.Fatal(err)
	}
	if c.AppliedIndex() != 250 {
		t.Fatalf("restored applied index %d, want 250", c.AppliedIndex())
	}
	for i := 250; i < len(log); i++ {
		c.Apply(uint64(i+1), log[i])
	}
	assertSameState(t, a, c)
}

func assertSameState(t *testing.T, a, b *Store) {
	t.Helper()
	if a.Digest() != b.Digest() {
		t.Errorf("digests differ: %s vs %s", a.Digest(), b.Digest())
	}
	if !reflect.DeepEqual(a.Hosts(), b.Hosts()) {
		t.Errorf("hosts differ:\n%+v\n%+v", a.Hosts(), b.Hosts())
	}
	if !reflect.DeepEqual(a.Flavors(), b.Flavors()) {
		t.Errorf("flavors differ:\n%+v\n%+v", a.Flavors(), b.Flavors())
	}
	if a.AppliedIndex() != b.AppliedIndex() {
		t.Errorf("applied index %d vs %d", a.AppliedIndex(), b.AppliedIndex())
	}
}

func TestRegisterHostAndStatus(t *testing.T) {
	a := newApplier(t)
	h := a.ok(&RegisterHost{Meta: at(1), Name: "n1", RaftAddr: "a:1"}).(Host)
	if h.Kind != KindIronic || h.Status != HostUp || !h.JoinedAt.Equal(at(1).At) || !h.ChangedAt.Equal(at(1).At) {
		t.Fatalf("new host = %+v", h)
	}
	h = a.ok(&RegisterHost{Meta: at(2), Name: "n1", RaftAddr: "a:1", Kind: KindIronic}).(Host)
	if !h.ChangedAt.Equal(at(1).At) {
		t.Fatalf("unchanged re-registration moved ChangedAt: %+v", h)
	}
	h = a.ok(&RegisterHost{Meta: at(3), Name: "n1", RaftAddr: "a:2"}).(Host)
	if h.RaftAddr != "a:2" || !h.ChangedAt.Equal(at(3).At) || !h.JoinedAt.Equal(at(1).At) {
		t.Fatalf("address change = %+v", h)
	}
	h = a.ok(&SetHostStatus{Meta: at(4), Name: "n1", Status: HostDown}).(Host)
	if h.Status != HostDown || !h.ChangedAt.Equal(at(4).At) {
		t.Fatalf("set down = %+v", h)
	}
	h = a.ok(&SetHostStatus{Meta: at(5), Name: "n1", Status: HostDown}).(Host)
	if !h.ChangedAt.Equal(at(4).At) {
		t.Fatalf("same status moved ChangedAt: %+v", h)
	}
	a.ok(&SetHostStatus{Meta: at(6), Name: "n1", Status: HostLeft})
	h = a.ok(&RegisterHost{Meta: at(7), Name: "n1", RaftAddr: "a:2"}).(Host)
	if h.Status != HostUp || !h.ChangedAt.Equal(at(7).At) || !h.JoinedAt.Equal(at(1).At) {
		t.Fatalf("left host registering again = %+v", h)
	}
	got, err := a.s.Host("n1")
	if err != nil || got != h {
		t.Fatalf("Host(n1) = %+v, %v; want %+v", got, err, h)
	}
	if _, err := a.s.Host("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Host(nope) = %v", err)
	}
	a.ok(&RegisterHost{Meta: at(8), Name: "a0", Kind: KindHypervisor})
	if hs := a.s.Hosts(); len(hs) != 2 || hs[0].Name != "a0" || hs[0].Kind != KindHypervisor {
		t.Fatalf("Hosts() = %+v", hs)
	}
}

func TestFlavorLifecycle(t *testing.T) {
	a := newApplier(t)
	f := a.ok(&CreateFlavor{Meta: at(1), Flavor: Flavor{ID: "f1", Name: "small", VCPUs: 1, RAM: 512,
		ExtraSpecs: map[string]string{}, CreatedAt: at(99).At}}).(Flavor)
	if f.RxTxFactor != 1.0 || f.ExtraSpecs != nil || !f.CreatedAt.Equal(at(1).At) || !f.UpdatedAt.Equal(at(1).At) {
		t.Fatalf("created = %+v", f)
	}
	f = a.ok(&SetFlavorExtraSpecs{Meta: at(2), ID: "f1", Specs: map[string]string{"a": "1", "b": "2"}}).(Flavor)
	f = a.ok(&SetFlavorExtraSpecs{Meta: at(3), ID: "f1", Specs: map[string]string{"b": "3", "c": "4"}}).(Flavor)
	if want := map[string]string{"a": "1", "b": "3", "c": "4"}; !reflect.DeepEqual(f.ExtraSpecs, want) || !f.UpdatedAt.Equal(at(3).At) {
		t.Fatalf("merged = %+v", f)
	}
	f.ExtraSpecs["a"] = "mutated" // results are copies
	if got, _ := a.s.Flavor("f1"); got.ExtraSpecs["a"] != "1" {
		t.Fatal("mutating a result changed the store")
	}
	f = a.ok(&DeleteFlavorExtraSpec{Meta: at(4), ID: "f1", Key: "a"}).(Flavor)
	if _, has := f.ExtraSpecs["a"]; has || !f.UpdatedAt.Equal(at(4).At) {
		t.Fatalf("after delete spec = %+v", f)
	}
	if got, err := a.s.FlavorByName("small"); err != nil || got.ID != "f1" {
		t.Fatalf("FlavorByName = %+v, %v", got, err)
	}
	a.ok(&DeleteFlavor{Meta: at(5), ID: "f1"})
	if _, err := a.s.Flavor("f1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Flavor after delete = %v", err)
	}
	if _, err := a.s.FlavorByName("small"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("FlavorByName after delete = %v", err)
	}
	a.ok(&CreateFlavor{Meta: at(6), Flavor: testFlavor("f2", "small")}) // name is free again
	a.ok(&CreateFlavor{Meta: at(7), Flavor: testFlavor("f10", "big")})
	fs := a.s.Flavors()
	if len(fs) != 2 || fs[0].ID != "f10" || fs[1].ID != "f2" {
		t.Fatalf("Flavors() not sorted by ID: %+v", fs)
	}
}

func TestUnknownCommands(t *testing.T) {
	a := newApplier(t)
	a.ok(&Noop{Meta: at(1)})
	before := a.s.Digest()
	if r := a.s.Apply(2, []byte{byte(IgnoreUnknownFlag | 99), '{', '}'}); r != (Result{}) {
		t.Fatalf("ignorable unknown = %+v", r)
	}
	if a.s.AppliedIndex() != 2 || a.s.Digest() != before {
		t.Fatalf("ignorable unknown: index %d, state changed %t", a.s.AppliedIndex(), a.s.Digest() != before)
	}

	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"unknown", []byte{99, '{', '}'}, "unknown command type 99 at index 3: this peer is older than the leader; upgrade it (a newer corral wrote it: a downgrade past a new command type is not supported"},
		{"corrupt", []byte{byte(CmdCreateFlavor), '{'}, "corrupt log entry at index 3"},
		{"corrupt ignorable-looking known", []byte{byte(CmdNoop), '['}, "corrupt log entry at index 3"},
		{"empty", nil, "corrupt log entry at index 3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg := mustPanic(t, func() { a.s.Apply(3, tc.data) })
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("panic %q does not contain %q", msg, tc.want)
			}
			if a.s.AppliedIndex() != 2 {
				t.Fatalf("applied index moved to %d", a.s.AppliedIndex())
			}
		})
	}
	// The store is still usable: no lock was left held.
	a.index = 2
	a.ok(&Noop{Meta: at(3)})
}

func mustPanic(t *testing.T, f func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatal("did not panic")
		}
		msg = fmt.Sprint(r)
	}()
	f()
	return ""
}

func TestWaitApplied(t *testing.T) {
	s := New()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitApplied(ctx, 0); err != nil {
		t.Fatalf("WaitApplied(0) = %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.WaitApplied(ctx, 3) }()
	noop := mustEncode(t, &Noop{Meta: at(0)})
	s.Apply(1, noop)
	s.Apply(2, noop)
	select {
	case err := <-done:
		t.Fatalf("returned early at index 2: %v", err)
	default:
	}
	s.Apply(3, noop)
	if err := <-done; err != nil {
		t.Fatalf("WaitApplied(3) = %v", err)
	}

	// Restore also wakes waiters.
	var snap bytes.Buffer
	s.Apply(10, noop)
	s.Snapshot().WriteTo(&snap)
	fresh := New()
	go func() { done <- fresh.WaitApplied(ctx, 10) }()
	if err := fresh.Restore(&snap); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitApplied after restore = %v", err)
	}

	cctx, ccancel := context.WithCancel(context.Background())
	go func() { done <- s.WaitApplied(cctx, 100) }()
	ccancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitApplied on cancel = %v, want context.Canceled", err)
	}
}

func TestConcurrentReadsAndApplies(t *testing.T) {
	log := genLog(t, 3, 300)
	s := New()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	readers := make(chan struct{})
	go func() {
		defer close(readers)
		for i := uint64(1); i <= uint64(len(log)); i += 25 {
			if err := s.WaitApplied(ctx, i); err != nil {
				t.Error(err)
				return
			}
			s.Flavors()
			s.Hosts()
			s.Digest()
			s.Snapshot().WriteTo(new(bytes.Buffer))
		}
	}()
	for i, entry := range log {
		s.Apply(uint64(i+1), entry)
	}
	<-readers
}
