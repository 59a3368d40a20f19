package fsm

import (
	"slices"
	"strings"
	"time"
)

// Ownership is what an owner's manager reads of each of its servers on
// every pass: enough to tell which need work and which changed owner
// epoch, without copying the whole server.
type Ownership struct {
	ID          string
	Status      ServerStatus
	TaskState   string
	Epoch       uint64
	OwnerSince  time.Time
	OwnerReason string
}

// Owned returns the live servers owned by host, sorted by ID, as
// Ownership: a cheap OwnedBy for a host that walks its servers after
// every burst of log entries.
func (s *Store) Owned(host string) []Ownership {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Ownership
	for _, v := range s.st.servers {
		if v.Host == host && v.Live() {
			out = append(out, Ownership{ID: v.ID, Status: v.Status, TaskState: v.TaskState, Epoch: v.Epoch,
				OwnerSince: v.OwnerSince, OwnerReason: v.OwnerReason})
		}
	}
	slices.SortFunc(out, func(a, b Ownership) int { return strings.Compare(a.ID, b.ID) })
	return out
}
