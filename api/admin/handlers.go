package admin

import "github.com/corral-dev/corral/api/core"

// Config is what the admin API needs besides the replicated state.
type Config struct {
	// OnLeave is called (in the background) by POST /v1/agent/leave.
	OnLeave func()
	// Operator serves the operator endpoints (gossip keyring, raft peers,
	// snapshots; nil: 501).
	Operator Operator
}

// Handlers serve the admin API.
type Handlers struct {
	st       *core.State
	onLeave  func()
	operator Operator
}

// New returns the admin API's handlers over st.
func New(st *core.State, cfg Config) *Handlers {
	return &Handlers{st: st, onLeave: cfg.OnLeave, operator: cfg.Operator}
}
