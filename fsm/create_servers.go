package fsm

import "fmt"

// MaxCreateBatch bounds the servers one CreateServers entry carries.
const MaxCreateBatch = 128

// CreateServers is several new servers decided together by the leader and
// committed in one entry. Each applies as its own CreateServer would, in
// order, at the entry's time, and gets its own answer: one refused (a
// stale claim, a duplicate id) refuses nothing else. The entry as a whole
// never fails.
type CreateServers struct {
	Meta
	Servers []CreateServer `json:"servers"`
}

// Type implements Command.
func (*CreateServers) Type() CommandType { return CmdCreateServers }

// BatchResult is the value of a CreateServers entry: one Result per
// server, in the entry's order.
type BatchResult []Result

func init() {
	register[CreateServers](CmdCreateServers, "CreateServers", applyCreateServers)
}

func applyCreateServers(st *state, c *CreateServers) (any, error) {
	if len(c.Servers) == 0 || len(c.Servers) > MaxCreateBatch {
		return nil, fmt.Errorf("%w: a CreateServers entry carries 1 to %d servers, got %d", ErrInvalid, MaxCreateBatch, len(c.Servers))
	}
	out := make(BatchResult, len(c.Servers))
	for i := range c.Servers {
		sub := c.Servers[i]
		sub.At, sub.Bounded = c.At, c.Bounded
		v, err := applyCreateServer(st, &sub)
		out[i] = Result{Value: v, Err: err}
	}
	return out, nil
}

// decided decides the servers together, in order: each decision counts
// the claims and hosts of those before it as if they were applied, and one
// Placement query per flavor serves the whole batch.
func (c *CreateServers) decided(st *state, avoid []string) (Command, []bool) {
	d := *c
	d.Servers = make([]CreateServer, len(c.Servers))
	starved := make([]bool, len(c.Servers))
	pending := newPendingClaims(len(c.Servers))
	for i := range c.Servers {
		s := c.Servers[i].undecided(avoid)
		scheduleWith(st, s, pending)
		pending.add(s)
		d.Servers[i], starved[i] = *s, s.starved
	}
	return &d, starved
}
