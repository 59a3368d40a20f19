package fsm

import "testing"

func TestSetHostDrainReason(t *testing.T) {
	a := newApplier(t)
	a.ok(&RegisterHost{Meta: at(0), Name: "h1"})
	a.ok(&SetHostDrain{Meta: at(1), Name: "h1", Drained: true, Reason: "firmware"})
	if h, _ := a.s.Host("h1"); !h.Drained || h.DrainReason != "firmware" || !h.ChangedAt.Equal(t0.Add(1e9)) {
		t.Fatalf("drained: %+v", h)
	}
	a.ok(&SetHostDrain{Meta: at(2), Name: "h1", Drained: true, Reason: "disks"})
	if h, _ := a.s.Host("h1"); h.DrainReason != "disks" {
		t.Fatalf("a new reason replaces the old: %+v", h)
	}
	a.ok(&SetHostDrain{Meta: at(3), Name: "h1", Drained: false, Reason: "ignored"})
	if h, _ := a.s.Host("h1"); h.Drained || h.DrainReason != "" {
		t.Fatalf("undrained: %+v", h)
	}
}
