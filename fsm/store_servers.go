package fsm

import (
	"github.com/corral-dev/corral/fsm/placement"
	"slices"
	"strings"
)

// Servers returns every server (deleted ones included), sorted by
// creation time, then ID.
func (s *Store) Servers() []Server {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Server, 0, len(s.st.servers))
	for _, v := range s.st.servers {
		out = append(out, cloneServer(v))
	}
	slices.SortFunc(out, func(a, b Server) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Server returns one server (deleted ones too) or an error wrapping ErrNotFound.
func (s *Store) Server(id string) (Server, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.st.servers[id]
	if !ok {
		return Server{}, errServerNotFound(id)
	}
	return cloneServer(v), nil
}

// OwnedBy returns the live servers owned by host, sorted by ID.
func (s *Store) OwnedBy(host string) []Server {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Server
	for _, id := range sortedKeys(s.st.servers) {
		v := s.st.servers[id]
		if v.Host == host && v.Live() {
			out = append(out, cloneServer(v))
		}
	}
	return out
}

// HostLoad returns the number of live servers of every host.
func (s *Store) HostLoad() map[string]int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return hostLoad(s.st)
}

// Nodes returns the Ironic node mirror, sorted by UUID.
func (s *Store) Nodes() []Node {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Node, 0, len(s.st.nodes))
	for _, id := range sortedKeys(s.st.nodes) {
		out = append(out, cloneNode(s.st.nodes[id]))
	}
	return out
}

// Node returns one mirrored node or an error wrapping ErrNotFound.
func (s *Store) Node(uuid string) (Node, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, ok := s.st.nodes[uuid]
	if !ok {
		return Node{}, errNodeNotFound(uuid)
	}
	return cloneNode(n), nil
}

func errNodeNotFound(uuid string) error {
	return wrapNotFound("Ironic node " + uuid + " is not in the mirror: it may not be synced yet")
}

// Reservations returns every node reservation, sorted by node UUID.
func (s *Store) Reservations() []Reservation {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Reservation, 0, len(s.st.reservations))
	for _, node := range sortedKeys(s.st.reservations) {
		srv := s.st.servers[s.st.reservations[node]]
		out = append(out, Reservation{NodeUUID: node, ServerID: srv.ID, Host: srv.Host, AllocationUUID: srv.AllocationUUID})
	}
	return out
}

// ReservedBy returns the server holding a node, or "".
func (s *Store) ReservedBy(node string) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.reservations[node]
}

// PlanReassign returns, without changing anything, the moves that would
// take host's live servers elsewhere now (a dry run of a death or drain).
func (s *Store) PlanReassign(host string, avoid ...string) []Move {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return PlanReassign(s.st, host, avoid...)
}

// LegacyInventory reports whether node providers report standard classes.
func (s *Store) LegacyInventory() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.legacyInventory
}

// Placement returns a copy of the placement state, for reads that need
// more than one call to be consistent.
func (s *Store) Placement() *placement.Store {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.placement.Clone()
}

// PlacementRead runs f on the live placement state under the read lock;
// f must not keep or change it.
func (s *Store) PlacementRead(f func(p *placement.Store)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f(s.st.placement)
}
