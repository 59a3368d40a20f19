package check

import (
	"fmt"
	"sort"
	"time"

	"github.com/corral-dev/corral/jepsen/history"
)

// FaultResult says whether the run was recorded under the faults the
// report names. A fault the nemesis could not inject (iptables refused, a
// signal failed, a process did not stop or exit in time) or could not undo
// makes the run invalid as a test, whatever the other checkers say: the
// suite then exits 2. A window in which no operation saw any effect of its
// fault is only a warning: the fault happened, but tested little.
type FaultResult struct {
	Valid          bool         `json:"valid"`
	Failed         []FaultIssue `json:"failed,omitempty"`
	Unfelt         []FaultIssue `json:"unfelt,omitempty"`
	FinalHealError string       `json:"final_heal_error,omitempty"`
	SlowMS         float64      `json:"slow_threshold_ms"` // an operation slower than this felt the fault
}

// FaultIssue is one window's problem.
type FaultIssue struct {
	Window  int    `json:"window"` // 1-based, as in the report's table
	Name    string `json:"name"`
	Detail  string `json:"detail"`
	Problem string `json:"problem"`
}

// minSlow is the floor of the slow threshold: below it a latency is
// scheduling noise, not a fault's effect.
const minSlow = 50 * time.Millisecond

// slowThreshold is twice the 99th percentile latency of the operations
// completed outside every fault window (at least minSlow); 0 when there
// are none.
func slowThreshold(pairs []history.Pair, windows []history.Window) time.Duration {
	var lat []time.Duration
	for _, p := range pairs {
		if p.Complete == nil {
			continue
		}
		in := false
		for _, w := range windows {
			in = in || (p.Complete.Time >= w.Start && p.Invoke.Time <= w.End)
		}
		if !in {
			lat = append(lat, p.Latency())
		}
	}
	if len(lat) == 0 {
		return 0
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return max(2*lat[(len(lat)*99)/100], minSlow)
}

// Faults checks that every fault was injected and healed, and warns
// of windows that no operation felt: none that overlapped the window
// failed, ended with an unknown outcome (or never ended), or was slow.
func Faults(ix *history.Index, windows []history.Window, finalHealErr string) FaultResult {
	res := FaultResult{Valid: finalHealErr == "", FinalHealError: finalHealErr}
	slow := slowThreshold(ix.Pairs, windows)
	res.SlowMS = ms(slow)
	for i, w := range windows {
		issue := FaultIssue{Window: i + 1, Name: w.Name, Detail: w.Detail}
		if w.Error != "" {
			issue.Problem = "not injected: " + w.Error
			res.Failed = append(res.Failed, issue)
		}
		if w.HealError != "" {
			issue.Problem = "not healed: " + w.HealError
			res.Failed = append(res.Failed, issue)
		}
		if w.Error != "" {
			continue
		}
		ops, felt := 0, false
		for _, p := range ix.Pairs {
			if p.Invoke.Time > w.End || (p.Complete != nil && p.Complete.Time < w.Start) {
				continue
			}
			ops++
			switch {
			case p.Complete == nil || p.Type() == history.Info:
				felt = true
			case !succeeded(p):
				felt = true
			case slow > 0 && p.Latency() > slow:
				felt = true
			}
		}
		if !felt {
			issue.Problem = fmt.Sprintf("no operation saw an effect: none of the %d operations during it failed, "+
				"ended with an unknown outcome or took longer than %.0f ms", ops, ms(slow))
			if ops == 0 {
				issue.Problem = "no operation ran during it"
			}
			res.Unfelt = append(res.Unfelt, issue)
		}
	}
	res.Valid = res.Valid && len(res.Failed) == 0
	return res
}
