package check

import (
	"fmt"

	"github.com/corral-dev/corral/jepsen/history"
)

// UpgradeResult is the check of the run's upgrade of a peer (-old-bin):
// valid when the agent was upgraded (its "upgrade" window injected and
// healed) and, when the old release did not read msgpack entries, no
// leader wrote them before the upgraded agent started again (the window's
// end: until then a peer that cannot read them is in the cluster) and a
// leader did after it. The other checkers hold the run to the usual
// invariants through the mixed cluster and the switch.
type UpgradeResult struct {
	Valid       bool     `json:"valid"`
	Agent       string   `json:"agent"`
	From        string   `json:"from"`
	StoppedAtS  float64  `json:"stopped_at_s"`       // the old agent stopped
	StartedAtS  float64  `json:"started_at_s"`       // the new binary started
	MsgpackAtS  *float64 `json:"first_msgpack_at_s"` // a leader first wrote msgpack entries (nil: never)
	Problems    []string `json:"problems,omitempty"`
	Switches    int      `json:"encoding_switches"`     // lines of the agents' logs
	Expectation string   `json:"expectation,omitempty"` // what was checked of the switch
}

// Upgrade checks the upgrade against the fault windows.
func Upgrade(u *history.Upgrade, windows []history.Window) UpgradeResult {
	res := UpgradeResult{Valid: true, Agent: u.Agent, From: u.From, Switches: len(u.Switches)}
	var w *history.Window
	for i := range windows {
		if windows[i].Name == "upgrade" {
			w = &windows[i]
			break
		}
	}
	if w == nil {
		res.Valid = false
		res.Problems = append(res.Problems, "the agent was never upgraded (no upgrade window: -upgrade-at too late for -duration?)")
		return res
	}
	res.StoppedAtS, res.StartedAtS = float64(w.Start)/1e9, float64(w.End)/1e9
	if w.Error != "" || w.HealError != "" {
		res.Valid = false
		res.Problems = append(res.Problems, fmt.Sprintf("the upgrade failed: %s%s", w.Error, w.HealError))
	}
	for _, s := range u.Switches {
		if s.Encoding != "msgpack" {
			continue
		}
		if res.MsgpackAtS == nil {
			at := float64(s.At) / 1e9
			res.MsgpackAtS = &at
		}
		if !u.FromReadsMsgpack && s.At < w.End {
			res.Valid = false
			res.Problems = append(res.Problems, fmt.Sprintf("%s wrote msgpack entries at %.1fs, before the upgraded %s started at %.1fs: "+
				"a peer that cannot read them was in the cluster", s.Agent, float64(s.At)/1e9, u.Agent, res.StartedAtS))
		}
	}
	switch {
	case u.FromReadsMsgpack:
		res.Expectation = "the old release reads msgpack entries: no switch expected at the upgrade"
	case res.MsgpackAtS == nil:
		res.Valid = false
		res.Problems = append(res.Problems, "no leader wrote msgpack entries after the upgrade, though every peer then read them")
	default:
		res.Expectation = "JSON entries while the old release was in the cluster, msgpack once it was upgraded"
	}
	return res
}

// Summary is the result in one line.
func (u UpgradeResult) Summary() string {
	msg := "never"
	if u.MsgpackAtS != nil {
		msg = fmt.Sprintf("at %.1fs", *u.MsgpackAtS)
	}
	out := fmt.Sprintf("%s ran %s until %.1fs, this run's binary from %.1fs; msgpack entries first written %s", u.Agent, u.From,
		u.StoppedAtS, u.StartedAtS, msg)
	for _, p := range u.Problems {
		out += "; " + p
	}
	return out
}
