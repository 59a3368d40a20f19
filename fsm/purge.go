package fsm

import (
	"fmt"
	"slices"
	"time"
)

// MaxPurgeBatch is the most servers one PurgeServers entry removes, so a
// purge after a long retention stays a series of small log entries.
const MaxPurgeBatch = 1000

// PurgeServers ends the retention of deleted servers: it removes from the
// state the servers of IDs that are DELETED and were last updated at or
// before Before. Deleted servers stay visible (GET /servers?deleted=true)
// until then, as in Nova. The leader chooses Before from its own clock
// (now less the retention) and the IDs from its state (DeletedBefore);
// Apply uses neither clock nor the leader's choice blindly: an ID that is
// unknown, not deleted or deleted after Before is skipped, so a stale or
// repeated purge changes nothing it should not.
type PurgeServers struct {
	Meta
	Before time.Time `json:"before"`
	IDs    []string  `json:"ids"`
}

// Type implements Command.
func (*PurgeServers) Type() CommandType { return CmdPurgeServers }

// PurgeResult is what a PurgeServers entry removed.
type PurgeResult struct {
	Purged []string `json:"purged"`
}

func init() {
	register[PurgeServers](CmdPurgeServers, "PurgeServers", applyPurgeServers)
}

func applyPurgeServers(st *state, c *PurgeServers) (any, error) {
	if c.Before.IsZero() {
		return nil, fmt.Errorf("%w: a purge needs the time before which deleted servers go", ErrInvalid)
	}
	if len(c.IDs) > MaxPurgeBatch {
		return nil, fmt.Errorf("%w: a purge removes at most %d servers per entry, got %d", ErrInvalid, MaxPurgeBatch, len(c.IDs))
	}
	before := c.Before.UTC()
	ids := slices.Clone(c.IDs)
	slices.Sort(ids)
	res := PurgeResult{Purged: []string{}}
	for i, id := range ids {
		if i > 0 && ids[i-1] == id {
			continue
		}
		s, ok := st.servers[id]
		if !ok || !purgeable(s, before) {
			continue
		}
		st.removeServer(id)
		res.Purged = append(res.Purged, id)
	}
	return res, nil
}

// purgeable reports whether s is deleted and was last updated at or before
// before. A deleted server holds no node and no claim: its release and
// its delete dropped both.
func purgeable(s Server, before time.Time) bool {
	return s.Status == StatusDeleted && s.NodeUUID == "" && !s.UpdatedAt.After(before)
}

// DeletedBefore returns the IDs of at most max servers that are deleted
// and were last updated at or before before, oldest first (then by ID):
// what the leader puts in a PurgeServers entry.
func (s *Store) DeletedBefore(before time.Time, max int) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := []string{}
	// The deleted servers in the order of their last update, up to before.
	s.st.idx.deleted.Scan(func(k changeKey) bool {
		v := s.st.servers[k.id]
		if v.UpdatedAt.After(before) {
			return false
		}
		if purgeable(v, before) {
			out = append(out, k.id)
		}
		return max <= 0 || len(out) < max
	})
	return out
}
