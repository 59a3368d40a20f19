package workload

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/cluster"
	"github.com/corral-dev/corral/jepsen/history"
	"github.com/corral-dev/corral/jepsen/internal/pace"
)

// MassBoot sends waves of Size simultaneous boots, spread over the peers,
// waits for them to settle, takes a snapshot of corral and Ironic, deletes
// them all and starts the next wave. The last wave is left standing so that
// the final-state checker sees a full cloud.
type MassBoot struct {
	*Ops
	IR     *client.Ironic
	RC     string
	Waves  int
	Size   int
	Nodes  int
	Settle time.Duration // how long a wave may take to leave BUILD, or to be deleted
	Logf   func(string, ...any)
	// Faulty, when set, reports whether a fault is in place: each wave's
	// boots wait (up to MaxWait) for one, so that every burst meets a fault.
	Faulty  func() bool
	MaxWait time.Duration
	// Hold is how long a wave stays up after it settled before the
	// deletes, under the nemesis; a second snapshot is taken after it.
	Hold time.Duration

	procs atomic.Int64
	mu    sync.Mutex
	waves []history.Wave
}

// WaveLog returns the waves run so far.
func (m *MassBoot) WaveLog() []history.Wave {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]history.Wave(nil), m.waves...)
}

func (m *MassBoot) process() int { return int(m.procs.Add(1)) }

func (m *MassBoot) peer(i int) *cluster.Agent { return m.Cl.Agents[i%len(m.Cl.Agents)] }

// Run runs the waves until they are done or ctx ends.
func (m *MassBoot) Run(ctx context.Context) {
	m.pool = newPool()
	for n := 1; n <= m.Waves && ctx.Err() == nil; n++ {
		w := m.wave(ctx, n, n == m.Waves)
		m.mu.Lock()
		m.waves = append(m.waves, w)
		m.mu.Unlock()
		snap := "none"
		if len(w.Snapshots) > 0 {
			snap = snapSummary(w.Snapshots[0], history.WavePrefix(n))
		}
		m.Logf("massboot: wave %d: %d boots sent, %d accepted, %d failed, %d unknown; settled %v, snapshot: %s; %d deletes sent, %d ok",
			n, w.Sent, w.Accepted, w.Failed, w.Unknown, w.Settled, snap, w.DeletesSent, w.DeletesOK)
	}
}

func (m *MassBoot) wave(ctx context.Context, n int, last bool) history.Wave {
	w := history.Wave{Number: n}
	w.FreeAtStart, w.FreeError = m.waitFree(ctx)
	w.DuringFault = m.waitFault(ctx)
	m.Logf("massboot: wave %d: %d nodes free, sending %d boots at once (during a fault: %v)", n, len(w.FreeAtStart), m.Size, w.DuringFault)
	w.Start = int64(m.Rec.Since())
	ids := m.bootAll(n, &w)
	var first history.Snap
	w.Settled, w.SettleError, first.Servers = m.settle(ctx, func(s history.ServerState) bool {
		return strings.HasPrefix(s.Name, history.WavePrefix(n)) && s.Status == "BUILD"
	})
	m.snapshot(ctx, &first)
	w.Snapshots = append(w.Snapshots, first)
	if m.Hold > 0 && pace.Sleep(ctx, m.Hold) {
		var again history.Snap
		_, _, again.Servers = m.settle(ctx, func(history.ServerState) bool { return false })
		m.snapshot(ctx, &again)
		w.Snapshots = append(w.Snapshots, again)
	}
	if last {
		w.Kept = true
		w.End = int64(m.Rec.Since())
		return w
	}
	for _, sn := range w.Snapshots {
		for _, s := range sn.Servers {
			if strings.HasPrefix(s.Name, history.WavePrefix(n)) {
				ids[s.ID] = s.Name // a boot whose answer was lost, applied
			}
		}
	}
	m.deleteAll(ids, &w)
	ok, why, _ := m.settle(ctx, func(s history.ServerState) bool { _, ours := ids[s.ID]; return ours })
	if !ok {
		m.Logf("massboot: wave %d not gone after %s: %s", n, m.Settle, why)
	}
	w.End = int64(m.Rec.Since())
	return w
}

// bootAll sends the wave's boots at the same moment, one client each,
// spread over the peers, and returns the ids acknowledged (id → name).
func (m *MassBoot) bootAll(n int, w *history.Wave) map[string]string {
	var mu sync.Mutex
	ids := map[string]string{}
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := 0; i < m.Size; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-gate
			c := m.bootOp(m.process(), m.peer(i), fmt.Sprintf("%s%03d", history.WavePrefix(n), i))
			mu.Lock()
			defer mu.Unlock()
			switch c.Type {
			case history.OK:
				w.Accepted++
				if c.Value.ID != "" {
					ids[c.Value.ID] = c.Value.Name
				}
			case history.Fail:
				w.Failed++
			default:
				w.Unknown++
			}
		}(i)
	}
	w.Sent = m.Size
	close(gate)
	wg.Wait()
	return ids
}

// deleteAll deletes every server of the wave at once, retrying a delete
// that certainly was not applied (503) or whose outcome is unknown.
func (m *MassBoot) deleteAll(ids map[string]string, w *history.Wave) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	gate := make(chan struct{})
	i := 0
	for id, name := range ids {
		wg.Add(1)
		go func(i int, id, name string) {
			defer wg.Done()
			<-gate
			for attempt := 0; attempt < 5; attempt++ {
				c := m.deleteOp(m.process(), m.peer(i+attempt), id, name)
				mu.Lock()
				w.DeletesSent++
				if c.Type == history.OK {
					w.DeletesOK++
				}
				mu.Unlock()
				if c.Type == history.OK || c.Value.NotFound {
					return
				}
				time.Sleep(time.Second) // pacing between retries, not a wait for a state
			}
		}(i, id, name)
		i++
	}
	close(gate)
	wg.Wait()
}

// settle lists the servers linearizably (recorded in the history) through
// the peers in turn until none is busy, or m.Settle passes. It returns the
// last successful list.
func (m *MassBoot) settle(ctx context.Context, busy func(history.ServerState) bool) (bool, string, []history.ServerState) {
	deadline := time.Now().Add(m.Settle)
	var last []history.ServerState
	why := "no list succeeded"
	for i := 0; ; i++ {
		c := m.listOp(m.process(), m.peer(i), history.Linearizable)
		if c.Type == history.OK {
			last = c.Value.Servers
			n := 0
			for _, s := range last {
				if busy(s) {
					n++
				}
			}
			if n == 0 {
				return true, "", last
			}
			why = fmt.Sprintf("%d servers still busy", n)
		} else {
			why = c.Error
		}
		if time.Now().After(deadline) || !pace.Sleep(ctx, time.Second) {
			return false, why, last
		}
	}
}

// waitFault waits until a fault is in place (at most MaxWait) and says
// whether one is.
func (m *MassBoot) waitFault(ctx context.Context) bool {
	if m.Faulty == nil {
		return false
	}
	deadline := time.Now().Add(m.MaxWait)
	for !m.Faulty() {
		if time.Now().After(deadline) || !pace.Sleep(ctx, 100*time.Millisecond) {
			return false
		}
	}
	return true
}

// snapshot stamps s and adds Ironic's nodes and allocations, read after
// the list s holds.
func (m *MassBoot) snapshot(ctx context.Context, s *history.Snap) {
	s.Time = int64(m.Rec.Since())
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var err error
	if s.Nodes, err = m.IR.Nodes(cctx, m.RC); err != nil {
		s.Errors = append(s.Errors, "Ironic nodes: "+err.Error())
	}
	if s.Allocations, err = m.IR.Allocations(cctx, m.RC); err != nil {
		s.Errors = append(s.Errors, "Ironic allocations: "+err.Error())
	}
}

// waitFree waits until the previous wave's nodes are back (every node
// free, or none in a transitional state twice in a row, or m.Settle
// passed) and returns the free nodes with their updated_at.
func (m *MassBoot) waitFree(ctx context.Context) ([]history.NodeStamp, string) {
	deadline := time.Now().Add(m.Settle)
	calm := 0
	for {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		nodes, err := m.IR.Nodes(cctx, m.RC)
		cancel()
		var free []history.NodeStamp
		if err == nil {
			moving := false
			for _, n := range nodes {
				switch {
				case history.FreeNode(n):
					free = append(free, history.NodeStamp{UUID: n.UUID, Updated: client.Str(n.UpdatedAt)})
				case n.ProvisionState != "active" && n.ProvisionState != "available":
					moving = true
				}
			}
			if moving {
				calm = 0
			} else {
				calm++
			}
			if len(free) >= m.Nodes || calm >= 2 {
				return free, ""
			}
		}
		if time.Now().After(deadline) || !pace.Sleep(ctx, 500*time.Millisecond) {
			if err != nil {
				return free, err.Error()
			}
			return free, ""
		}
	}
}

// snapSummary counts a wave's servers in a snapshot by status.
func snapSummary(s history.Snap, pfx string) string {
	counts := map[string]int{}
	for _, x := range s.Servers {
		if strings.HasPrefix(x.Name, pfx) {
			counts[x.Status]++
		}
	}
	if len(counts) == 0 {
		return "no servers"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	return strings.Join(parts, ", ")
}
