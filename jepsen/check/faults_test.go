package check

import (
	"testing"
	"time"

	"github.com/corral-dev/corral/jepsen/history"
	"github.com/corral-dev/corral/jepsen/history/historytest"
)

// A window is felt by an operation that failed, ended with an unknown
// outcome, never ended, or was slow.
func TestFeltWindowIsNoWarning(t *testing.T) {
	slowRead := func(h *historytest.Hist) {
		v := history.OpValue{ID: historytest.IDB, Name: "b"}
		h.Add(history.Op{Process: 1, Type: history.Invoke, F: history.FRead, Node: "n3", Consistency: history.Linearizable, Value: v})
		h.T += int64(2 * time.Second)
		v.Server = &history.ServerState{ID: historytest.IDB, Name: "b", Status: "ACTIVE"}
		h.Add(history.Op{Process: 1, Type: history.OK, F: history.FRead, Node: "n3", Consistency: history.Linearizable, Value: v, Code: 200})
	}
	for name, during := range map[string]func(*historytest.Hist){
		"failed":  func(h *historytest.Hist) { h.BootAs(8, "g", history.Fail, 503) },
		"unknown": func(h *historytest.Hist) { h.BootAs(8, "g", history.Info, 0) },
		"never ends": func(h *historytest.Hist) {
			h.Add(history.Op{Process: 8, Type: history.Invoke, F: history.FBoot, Node: "n1", Value: history.OpValue{Name: "g"}})
		},
		"slow": slowRead,
	} {
		h := historytest.CleanHistory()
		w := historytest.Window(h, "pause", "n4", func() { during(h) })
		if r := Faults(history.NewIndex(h.Ops), []history.Window{w}, ""); !r.Valid || len(r.Unfelt) != 0 {
			t.Errorf("%s: %+v", name, r)
		}
	}
	// A delete answered 404 is an answer, not an effect of the fault.
	h := historytest.CleanHistory()
	w := historytest.Window(h, "pause", "n4", func() { h.Del(2, historytest.IDA, "a", history.Fail, 404) })
	if r := Faults(history.NewIndex(h.Ops), []history.Window{w}, ""); len(r.Unfelt) != 1 {
		t.Errorf("a 404 delete counted as felt: %+v", r)
	}
}
