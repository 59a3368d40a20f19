package client

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// SideEffect is one entry of the Ironic simulator's side-effect log (GET
// /_sim/side-effects): a provision, power or VIF request it accepted. At is
// its time in the run (ns since the start, as the history's).
type SideEffect struct {
	Seq            int64     `json:"seq"`
	Time           time.Time `json:"time"`
	At             int64     `json:"at"`
	Node           string    `json:"node_uuid"`
	Method         string    `json:"method"`
	Path           string    `json:"path"`
	Kind           string    `json:"kind"`   // provision, power, vif
	Target         string    `json:"target"` // provision or power target; attach or detach
	VIF            string    `json:"vif,omitempty"`
	RequestID      string    `json:"request_id,omitempty"`
	UserAgent      string    `json:"user_agent,omitempty"`
	Status         int       `json:"status"`
	ProvisionState string    `json:"provision_state"`       // before the request
	PowerState     string    `json:"power_state,omitempty"` // before the request
}

// EffectLog is side_effects.json: the simulator's log at the end of the run.
type EffectLog struct {
	SideEffects []SideEffect `json:"side_effects"`
	Dropped     int64        `json:"dropped"`         // entries the simulator no longer kept
	Error       string       `json:"error,omitempty"` // why the log could not be read
}

// SideEffects reads the simulator's side-effect log; start is the run's
// start, to place each entry in the run's time.
func (ir *Ironic) SideEffects(ctx context.Context, start time.Time) EffectLog {
	var l EffectLog
	if err := ir.do(ctx, http.MethodGet, "/_sim/side-effects", nil, &l); err != nil {
		return EffectLog{Error: fmt.Sprintf("read the simulator's side-effect log: %v", err)}
	}
	for i := range l.SideEffects {
		l.SideEffects[i].At = int64(l.SideEffects[i].Time.Sub(start))
	}
	return l
}
