package history

import (
	"sort"
	"time"
)

// Pair is an invocation with its completion (Complete is nil when the
// history ended first; such an operation counts as info).
type Pair struct {
	Invoke   Op
	Complete *Op
}

// Type is the completion type (info when the history ended first).
func (p Pair) Type() string {
	if p.Complete == nil {
		return Info
	}
	return p.Complete.Type
}

// Latency is the time from invocation to completion (0 when incomplete).
func (p Pair) Latency() time.Duration {
	if p.Complete == nil {
		return 0
	}
	return time.Duration(p.Complete.Time - p.Invoke.Time)
}

// Pairs matches each invocation with the next completion of its process,
// in invocation order.
func Pairs(ops []Op) []Pair {
	open := map[int]int{}
	var out []Pair
	for _, op := range ops {
		switch op.Type {
		case Invoke:
			open[op.Process] = len(out)
			out = append(out, Pair{Invoke: op})
		case OK, Fail, Info:
			i, ok := open[op.Process]
			if !ok {
				continue
			}
			c := op
			out[i].Complete = &c
			delete(open, op.Process)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Invoke.Time < out[j].Invoke.Time })
	return out
}
