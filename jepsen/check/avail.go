package check

import (
	"sort"
	"time"

	"github.com/corral-dev/corral/jepsen/history"
)

// WindowStats is the availability during one fault window (or outside all).
type WindowStats struct {
	Name         string  `json:"name"`
	Detail       string  `json:"detail,omitempty"`
	Start        float64 `json:"start_s"`
	End          float64 `json:"end_s"`
	Writes       int     `json:"writes"`
	WritesOK     int     `json:"writes_ok"`
	Reads        int     `json:"reads"`
	ReadsOK      int     `json:"reads_ok"`
	WriteAvail   float64 `json:"write_availability"`
	ReadAvail    float64 `json:"read_availability"`
	RecoveryS    float64 `json:"recovery_s"` // heal → first acknowledged write invoked after it (-1: none)
	FaultError   string  `json:"fault_error,omitempty"`
	HealError    string  `json:"heal_error,omitempty"`
	P50LatencyMS float64 `json:"p50_latency_ms"`
	MaxLatencyMS float64 `json:"max_latency_ms"`
}

// AvailResult is the verdict of the availability checker: it is valid
// when the cluster served writes again after the last heal.
type AvailResult struct {
	Valid          bool          `json:"valid"`
	Overall        WindowStats   `json:"overall"`
	Healthy        WindowStats   `json:"healthy"` // outside every fault window
	Windows        []WindowStats `json:"windows"`
	FinalRecoveryS float64       `json:"final_recovery_s"` // last heal → cluster ready and a probe write acknowledged
	FinalError     string        `json:"final_error,omitempty"`
}

func isWrite(f string) bool {
	return f == history.FBoot || f == history.FDelete || f == history.FAction
}

// succeeded: the operation did what was asked (a read that found nothing,
// a delete of an unknown server and an action refused for the server's
// state are answers, not failures).
func succeeded(p history.Pair) bool {
	if p.Type() == history.OK {
		return true
	}
	c := p.Complete
	switch p.Invoke.F {
	case history.FDelete:
		return c != nil && c.Value.NotFound
	case history.FAction:
		return c != nil && (c.Value.NotFound || c.Code == 409)
	}
	return false
}

func stats(name string, pairs []history.Pair, in func(history.Pair) bool) WindowStats {
	w := WindowStats{Name: name}
	var lat []time.Duration
	for _, p := range pairs {
		if p.Complete == nil || !in(p) {
			continue
		}
		lat = append(lat, p.Latency())
		if isWrite(p.Invoke.F) {
			w.Writes++
			if succeeded(p) {
				w.WritesOK++
			}
		} else {
			w.Reads++
			if succeeded(p) {
				w.ReadsOK++
			}
		}
	}
	w.WriteAvail, w.ReadAvail = ratio(w.WritesOK, w.Writes), ratio(w.ReadsOK, w.Reads)
	if len(lat) > 0 {
		sortDurations(lat)
		w.P50LatencyMS = ms(lat[len(lat)/2])
		w.MaxLatencyMS = ms(lat[len(lat)-1])
	}
	return w
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func sortDurations(d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
}

// Availability measures each fault window: the share of operations
// completed in it that succeeded, and the time from its heal to the first
// acknowledged write invoked after the heal.
func Availability(ix *history.Index, windows []history.Window, finalRecovery time.Duration, finalErr string) AvailResult {
	res := AvailResult{Valid: finalErr == "", FinalRecoveryS: finalRecovery.Seconds(), FinalError: finalErr}
	res.Overall = stats("overall", ix.Pairs, func(history.Pair) bool { return true })
	inWindow := func(t int64) bool {
		for _, w := range windows {
			if t >= w.Start && t <= w.End {
				return true
			}
		}
		return false
	}
	res.Healthy = stats("healthy", ix.Pairs, func(p history.Pair) bool { return !inWindow(p.Complete.Time) })
	for _, w := range windows {
		ws := stats(w.Name, ix.Pairs, func(p history.Pair) bool { return p.Complete.Time >= w.Start && p.Complete.Time <= w.End })
		ws.Detail, ws.FaultError, ws.HealError = w.Detail, w.Error, w.HealError
		ws.Start, ws.End = float64(w.Start)/1e9, float64(w.End)/1e9
		ws.RecoveryS = -1
		for _, p := range ix.Pairs {
			if p.Invoke.Time >= w.End && isWrite(p.Invoke.F) && p.Type() == history.OK {
				if rec := float64(p.Complete.Time-w.End) / 1e9; ws.RecoveryS < 0 || rec < ws.RecoveryS {
					ws.RecoveryS = rec
				}
			}
		}
		res.Windows = append(res.Windows, ws)
	}
	return res
}
