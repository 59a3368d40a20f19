package fsm

import (
	"fmt"
	"slices"
	"time"
)

// External events: what other services tell a server's compute host
// through Nova's POST /os-server-external-events (Neutron: a port of the
// server changed, was plugged, unplugged or deleted; Ironic: its node's
// power changed; Cinder: a volume grew). corral's API answers them as
// Nova's does and records the ones it accepts in the server's history,
// as events of its current (latest) action, so that
// GET /servers/{id}/os-instance-actions/{request_id} shows them.
//
// Nova shows none of Neutron's events in an instance's actions and
// starts an action of its own for power-update (start or stop) and
// volume-extended (extend_volume). corral records every accepted event
// the same way, as an event of the current action: a history bounded to
// MaxServerActions must not lose a server's own actions to Neutron's
// notices, and an owner finishes its action's event by the action's name
// (history.go), which an action of the same name started by a notice
// would hide. An external event never stays open, and goes before the
// owner's event while that one is open, so that the owner's event stays
// the last, as finishAction (and every older peer) reads it.

// Names of the external events corral accepts (Nova's, up to
// microversion 2.79), and their statuses.
const (
	ExternalNetworkChanged = "network-changed"
	ExternalVIFPlugged     = "network-vif-plugged"
	ExternalVIFUnplugged   = "network-vif-unplugged"
	ExternalVIFDeleted     = "network-vif-deleted"
	ExternalVolumeExtended = "volume-extended" // from 2.51
	ExternalPowerUpdate    = "power-update"    // from 2.76

	ExternalCompleted  = "completed"
	ExternalFailed     = "failed"
	ExternalInProgress = "in-progress"
)

// ExternalEventNames are the names corral records.
var ExternalEventNames = []string{ExternalNetworkChanged, ExternalVIFPlugged, ExternalVIFUnplugged, ExternalVIFDeleted,
	ExternalVolumeExtended, ExternalPowerUpdate}

var externalStatuses = []string{ExternalCompleted, ExternalFailed, ExternalInProgress}

// Bounds of external events.
const (
	// MaxExternalEventsPerEntry bounds the events of one entry; the API
	// splits a longer request.
	MaxExternalEventsPerEntry = 100
	// MaxExternalEventsPerAction bounds the external events kept in one
	// action (the oldest go first).
	MaxExternalEventsPerAction = 8
	maxExternalTagLen          = 255
)

// ExternalEvent is one event the API accepted for a server.
type ExternalEvent struct {
	Server string `json:"server"`
	Name   string `json:"name"`
	Status string `json:"status"`
	Tag    string `json:"tag,omitempty"` // the port, volume or power state it is about
}

// RecordExternalEvents records accepted external events in the history
// of their servers (command 63, sent once every live peer knows it). An
// event of a server that is unknown, deleted or has no owner, or of a
// cluster without FeatureInstanceActions, records nothing; the value is
// the number recorded.
type RecordExternalEvents struct {
	Meta
	Events []ExternalEvent `json:"events"`
}

// Type implements Command.
func (*RecordExternalEvents) Type() CommandType { return CmdRecordExternalEvents }

func init() {
	register[RecordExternalEvents](CmdRecordExternalEvents, "RecordExternalEvents", applyRecordExternalEvents)
}

func applyRecordExternalEvents(st *state, c *RecordExternalEvents) (any, error) {
	if n := len(c.Events); n == 0 || n > MaxExternalEventsPerEntry {
		return nil, fmt.Errorf("%w: an entry carries 1 to %d external events, not %d", ErrInvalid, MaxExternalEventsPerEntry, n)
	}
	for _, e := range c.Events {
		switch {
		case e.Server == "" || len(e.Server) > maxServerNameLen:
			return nil, fmt.Errorf("%w: an external event's server must be 1 to %d characters", ErrInvalid, maxServerNameLen)
		case !slices.Contains(ExternalEventNames, e.Name):
			return nil, fmt.Errorf("%w: external event %q is unknown", ErrInvalid, e.Name)
		case !slices.Contains(externalStatuses, e.Status):
			return nil, fmt.Errorf("%w: external event status %q is not one of %v", ErrInvalid, e.Status, externalStatuses)
		case len(e.Tag) > maxExternalTagLen:
			return nil, fmt.Errorf("%w: an external event's tag is longer than %d characters", ErrInvalid, maxExternalTagLen)
		}
	}
	if !st.featureOn(FeatureInstanceActions) {
		return 0, nil
	}
	at := c.At.UTC()
	recorded := 0
	for _, e := range c.Events {
		s, ok := st.servers[e.Server]
		if !ok || !s.Live() || s.Host == "" {
			continue
		}
		if st.noteExternal(s, e, at) {
			recorded++
		}
	}
	return recorded, nil
}

// noteExternal records e as an event of the server's latest action; it
// reports whether the server has one.
func (st *state) noteExternal(s Server, e ExternalEvent, at time.Time) bool {
	acts := st.actions[s.ID]
	if len(acts) == 0 {
		return false
	}
	a := acts[len(acts)-1]
	evs := slices.Clone(a.Events)
	p := len(evs)
	if p > 0 && evs[p-1].FinishTime.IsZero() {
		p-- // the owner's event is open: it stays the last
	}
	result := ""
	switch e.Status {
	case ExternalCompleted:
		result = EventResultSuccess
	case ExternalFailed:
		result = EventResultError
	}
	if p > 0 && evs[p-1].Event == e.Name {
		// A repeat of the latest notice: it is updated, not added.
		evs[p-1].FinishTime, evs[p-1].Result, evs[p-1].Host = at, result, s.Host
	} else {
		evs = slices.Insert(evs, p, ActionEvent{Event: e.Name, StartTime: at, FinishTime: at, Result: result, Host: s.Host})
	}
	external := 0
	for _, ev := range evs {
		if slices.Contains(ExternalEventNames, ev.Event) {
			external++
		}
	}
	for i := 0; external > MaxExternalEventsPerAction; i++ {
		if slices.Contains(ExternalEventNames, evs[i].Event) {
			evs = slices.Delete(evs, i, i+1)
			external--
			i--
		}
	}
	a.Events, a.UpdatedAt = evs, at
	acts = slices.Clone(acts)
	acts[len(acts)-1] = a
	st.actions[s.ID] = acts
	return true
}
