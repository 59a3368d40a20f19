package compute

import (
	"fmt"
	"time"

	"github.com/corral-dev/corral/fsm"
)

// parking is a server waiting for its backend at one owner epoch.
type parking struct {
	epoch    uint64
	deleting bool // parked by a delete (else by a build)
	since    time.Time
}

// Await parks s until Wake(s): the manager starts no worker for it while
// it stays at this owner epoch and in this task (build or delete). The
// driver returns the error it gets, after arranging for Wake to be
// called. A delete requested during a build's wait unparks the server at
// once, and so does the server moving to another owner or epoch.
func (h *Handle) Await(s fsm.Server) error {
	m := h.m
	m.mu.Lock()
	m.parked[s.ID] = parking{epoch: s.Epoch, deleting: s.TaskState == fsm.TaskDeleting, since: time.Now()}
	m.mu.Unlock()
	return fmt.Errorf("%w: server %s at epoch %d", ErrAwaiting, s.ID, s.Epoch)
}

// Awaiting reports whether s is still parked at its epoch and task: a
// watcher drops what the manager no longer waits for.
func (h *Handle) Awaiting(s fsm.Server) bool {
	m := h.m
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.parked[s.ID]
	return ok && p.epoch == s.Epoch && p.deleting == (s.TaskState == fsm.TaskDeleting)
}

// Wake ends the wait of s (parked at its epoch): a worker takes the
// server's next step soon after. Waking a server that is not parked at
// that epoch does nothing.
func (h *Handle) Wake(s fsm.Server) {
	m := h.m
	m.mu.Lock()
	p, ok := m.parked[s.ID]
	if ok && p.epoch == s.Epoch {
		delete(m.parked, s.ID)
		m.m.awaitTime.Observe(time.Since(p.since).Seconds())
	}
	m.mu.Unlock()
	if ok {
		m.poke()
	}
}

// poke asks Run for a scan without waiting for the next log entry.
func (m *Manager) poke() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// buildStart is when this host began working on server id at epoch: the
// first worker's start, kept across the server's parks.
func (m *Manager) buildStart(id string, epoch uint64) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.started[id]
	if !ok || b.epoch != epoch {
		b = buildMark{epoch: epoch, at: time.Now()}
		m.started[id] = b
	}
	return b.at
}

// Parked is the number of servers waiting for the backend without a
// worker.
func (m *Manager) Parked() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.parked)
}
