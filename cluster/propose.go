package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/hashicorp/raft"

	"github.com/corral-dev/corral/cluster/forward"
	"github.com/corral-dev/corral/fsm"
)

// Consistency is a read consistency level.
type Consistency string

// Read consistency levels (see docs/consistency in the README):
//   - stale: this peer's replica as it is; fastest, may lag.
//   - default: as of the leader's commit index when the read starts; the
//     leader does not re-verify its leadership, so a deposed leader may
//     serve a briefly stale read during a partition.
//   - linearizable: a read index: the leader's commit index, confirmed by a
//     heartbeat round (VerifyLeader) in the same term, then applied here.
const (
	Stale        Consistency = "stale"
	Default      Consistency = "default"
	Linearizable Consistency = "linearizable"
)

// ParseConsistency parses a ?consistency= value; empty means default.
func ParseConsistency(s string) (Consistency, error) {
	switch Consistency(s) {
	case "":
		return Default, nil
	case Stale, Default, Linearizable:
		return Consistency(s), nil
	}
	return "", fmt.Errorf("%w (got %q)", ErrBadConsistency, s)
}

// Propose commits cmd through raft and waits until this peer has applied
// it, so the caller reads its own write. On a follower the write is
// forwarded to the leader. Business errors come back wrapped with the fsm
// sentinels (fsm.ErrConflict, ...). The returned index is the entry's.
func (n *Node) Propose(ctx context.Context, cmd fsm.Command) (uint64, error) {
	start := time.Now()
	defer func() { n.metrics.proposeLatency.Observe(time.Since(start).Seconds()) }()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*n.cfg.Raft.ApplyTimeout)
		defer cancel()
	}
	idx, err := n.propose(ctx, cmd, start)
	if err != nil {
		return idx, err
	}
	return idx, n.AwaitApplied(ctx, idx)
}

// ProposeCommitted commits cmd as Propose does, forwarded to the leader
// from a follower, and returns once the leader has applied it: every read
// at default or linearizable consistency, on any peer, sees it from then
// on, and so does a stale read on the leader. A follower's own replica
// may not have applied it yet (it learns the commit index from the
// leader's next AppendEntries); AwaitApplied waits for that.
func (n *Node) ProposeCommitted(ctx context.Context, cmd fsm.Command) (uint64, error) {
	start := time.Now()
	defer func() { n.metrics.proposeLatency.Observe(time.Since(start).Seconds()) }()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*n.cfg.Raft.ApplyTimeout)
		defer cancel()
	}
	return n.propose(ctx, cmd, start)
}

// AwaitApplied waits until this peer has applied the entry at idx (one
// that ProposeCommitted returned), so that a read of this replica sees it.
func (n *Node) AwaitApplied(ctx context.Context, idx uint64) error {
	if err := n.waitApplied(ctx, idx); err != nil {
		return fmt.Errorf("write committed at index %d but not yet applied on %s: %w", idx, n.cfg.Name, err)
	}
	return nil
}

// propose commits cmd once, and again while the write was certainly not
// applied (no leader, or not delivered), until ctx ends or this peer
// stops. The first attempt is made without the retry's machinery: it is
// the one nearly every write needs.
func (n *Node) propose(ctx context.Context, cmd fsm.Command, start time.Time) (uint64, error) {
	idx, err := n.proposeOnce(ctx, cmd)
	if err == nil || !retryable(err) {
		return idx, err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(n.ctx, cancel)()
	last, tried := err, true // the latest attempt's
	idx, err = backoff.Retry(rctx, func() (uint64, error) {
		if tried { // the first attempt, made above: wait before the next
			tried = false
			return 0, last
		}
		idx, err := n.proposeOnce(ctx, cmd)
		last = err
		if err != nil && !retryable(err) {
			return 0, backoff.Permanent(err)
		}
		return idx, err
	}, backoff.WithBackOff(proposeBackOff()), backoff.WithMaxElapsedTime(0))
	if err != nil {
		switch {
		case !retryable(last):
			return 0, last
		case ctx.Err() != nil:
			return 0, fmt.Errorf("%w (gave up after %s)", last, time.Since(start).Round(time.Millisecond))
		}
		return 0, ErrShutdown
	}
	return idx, nil
}

// proposeBackOff is the wait between attempts of a write: 10 ms, doubling
// up to 320 ms (an election takes about a second).
func proposeBackOff() backoff.BackOff {
	return &backoff.ExponentialBackOff{InitialInterval: 10 * time.Millisecond, Multiplier: 2, MaxInterval: 320 * time.Millisecond}
}

// retryable errors are those where the write was certainly not applied.
func retryable(err error) bool {
	return errors.Is(err, ErrNoLeader) || errors.Is(err, ErrNotLeader) || errors.Is(err, forward.ErrNotDelivered)
}

// proposeOnce applies cmd here when this peer leads, or forwards it to the
// leader (see forward.go).
func (n *Node) proposeOnce(ctx context.Context, cmd fsm.Command) (uint64, error) {
	if n.IsLeader() {
		return n.applyLocal(ctx, cmd)
	}
	return n.forwardApply(ctx, cmd)
}

// applyLocal commits cmd from the leader. A command that carries the
// leader's decisions (a new server's owner and claim, a reassignment
// plan) goes through the decider (decide.go): scheduled by fsm on the
// current state, one at a time, and decided again until it holds or
// nothing fits, the node mirror refreshed once before "No valid host";
// every attempt is committed by commit.
//
// New servers are decided in batches (one fsm.CreateServers entry for all
// those waiting) once every live peer advertises that it can apply that
// entry: an older peer would stop at it. A server action is committed
// with its request id (fsm.RequestServerActionWithID) on the same terms.
func (n *Node) applyLocal(ctx context.Context, cmd fsm.Command) (uint64, error) {
	idx, _, err := n.applyLocalValue(ctx, cmd)
	return idx, err
}

// applyLocalValue is applyLocal that also returns the entry's value (the
// fsm.Result's Value).
func (n *Node) applyLocalValue(ctx context.Context, cmd fsm.Command) (uint64, any, error) {
	if ra, ok := cmd.(*fsm.RequestServerAction); ok && n.CommandKnown(fsm.CmdRequestServerActionWithID) {
		cmd = &fsm.RequestServerActionWithID{RequestServerAction: *ra}
	}
	if err := checkQuotaCommand(cmd, n.CommandKnown); err != nil {
		return 0, nil, err
	}
	if !fsm.Decides(cmd) {
		return n.commit(ctx, cmd)
	}
	_, create := cmd.(*fsm.CreateServer)
	return n.decisions.decide(ctx, cmd, n.goneHosts(), create && n.CommandKnown(fsm.CmdCreateServers))
}

// settingTextBounds is advertised in gossip by every peer that applies
// fsm's bounds of stored text to the entries that carry fsm.Meta.Bounded.
// An older peer would store what a newer one refuses, so the leader sets
// the flag only while every live peer advertises this.
const settingTextBounds = "fsm_bounds"

// textBounded reports whether the entries this leader commits while
// members are the cluster carry fsm.Meta.Bounded.
func textBounded(members []memberState) bool {
	v, ok := agreedSetting(members, "", settingTextBounds)
	return ok && v == "true"
}

// settingCommands is advertised in gossip by every peer: the command types
// it can apply (fsm.KnownCommands).
const settingCommands = "fsm_commands"

// settingVersion is advertised in gossip by every peer that knows its
// release (Config.Version); it is shown, never agreed on.
const settingVersion = "version"

// CommandKnown reports whether every live admitted peer advertises that
// it can apply command type t (a stranger's gossip counts for nothing). A peer that cannot would stop at the entry (it
// refuses to apply part of the log), so a newer command is used only once
// the last peer of a rolling upgrade runs the newer version.
func (n *Node) CommandKnown(t fsm.CommandType) bool {
	seen := false
	for _, m := range n.counted(n.gossip.snapshot()) {
		if m.Status != MemberAlive {
			continue
		}
		if !fsm.CommandKnownIn(m.Meta.Settings[settingCommands], t) {
			return false
		}
		seen = true
	}
	return seen
}

// commit stamps cmd with the leader's clock and commits it through raft;
// it returns once this peer applied it, with the entry's value (the
// fsm.Result's Value) and Apply's business error.
func (n *Node) commit(ctx context.Context, cmd fsm.Command) (uint64, any, error) {
	members := n.counted(n.gossip.snapshot())
	cmd.Header().At = time.Now().UTC()
	cmd.Header().Bounded = textBounded(members)
	enc := entryEncoding(members, n.raftServers())
	data, err := fsm.EncodeAs(cmd, enc)
	if err != nil {
		return 0, nil, fmt.Errorf("encode %s: %w", cmd.Type(), err)
	}
	timeout := n.cfg.Raft.ApplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		if d := time.Until(dl); d < timeout {
			timeout = d
		}
	}
	if timeout <= 0 {
		return 0, nil, context.DeadlineExceeded
	}
	n.noteEncoding(enc)
	f := n.raft.Apply(data, timeout)
	if err := n.awaitApply(f); err != nil {
		switch {
		case errors.Is(err, raft.ErrNotLeader):
			return 0, nil, ErrNotLeader
		case errors.Is(err, raft.ErrEnqueueTimeout):
			return 0, nil, fmt.Errorf("%w: raft queue full", ErrNotReady)
		case errors.Is(err, raft.ErrRaftShutdown):
			return 0, nil, ErrShutdown
		case errors.Is(err, raft.ErrLeadershipLost):
			return 0, nil, fmt.Errorf("leadership was lost while committing; the write may or may not have been applied: read before retrying: %w", err)
		}
		return 0, nil, fmt.Errorf("raft apply: %w", err)
	}
	if b, ok := cmd.(*fsm.CreateServers); ok {
		n.metrics.createBatch.Observe(float64(len(b.Servers)))
	}
	res, ok := f.Response().(fsm.Result)
	if !ok {
		return f.Index(), nil, nil
	}
	return f.Index(), res.Value, res.Err
}

// awaitApply waits for a raft Apply (or Barrier) future. It gives up when this peer
// stops: with BatchApplyCh raft queues a write in a buffered channel, and
// a write queued just as raft shuts down is never answered, which would
// hold the peer's shutdown forever. Raft answers every other queued write,
// a follower with ErrNotLeader.
func (n *Node) awaitApply(f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-n.ctx.Done():
		return fmt.Errorf("this peer is stopping; the write may or may not have been applied: read before retrying: %w", n.ctx.Err())
	}
}

// ReadBarrier makes this peer's replica fit for a read at the given level.
func (n *Node) ReadBarrier(ctx context.Context, c Consistency) error {
	switch c {
	case Stale:
		return nil
	case Default, "":
		// A leader serves its own replica once it has committed an entry
		// of its term: before, it may not have applied what the previous
		// leader acknowledged (ReadIndex then answers ErrNoLeader).
		if n.IsLeader() && n.readyTerm.Load() == n.raft.CurrentTerm() {
			return nil
		}
	case Linearizable:
	default:
		return fmt.Errorf("%w (got %q)", ErrBadConsistency, c)
	}
	var idx uint64
	var err error
	if n.IsLeader() {
		idx, err = n.ReadIndex(ctx, c == Linearizable)
	} else {
		idx, err = n.forwardReadIndex(ctx, c)
	}
	if err != nil {
		return fmt.Errorf("%s read: %w", c, err)
	}
	return n.waitApplied(ctx, idx)
}

// ReadIndex returns an index that covers every write acknowledged before
// the call (leader only). With verify, leadership is confirmed by a quorum
// in the same term before the index is returned.
func (n *Node) ReadIndex(ctx context.Context, verify bool) (uint64, error) {
	if !n.IsLeader() {
		return 0, ErrNotLeader
	}
	term := n.raft.CurrentTerm()
	if n.readyTerm.Load() != term {
		return 0, fmt.Errorf("%w: leader of term %d has not committed its first entry yet", ErrNoLeader, term)
	}
	idx := n.raft.CommitIndex()
	if !verify {
		return idx, nil
	}
	f := n.raft.VerifyLeader()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return 0, fmt.Errorf("%w: %v", ErrNotLeader, err)
		}
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if n.raft.CurrentTerm() != term {
		return 0, ErrNotLeader
	}
	return idx, nil
}

// waitApplied blocks until every FSM-relevant entry up to idx is applied here.
func (n *Node) waitApplied(ctx context.Context, idx uint64) error {
	for {
		if n.appliedThrough(idx) {
			return nil
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
		err := n.store.WaitApplied(wctx, idx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("index %d not applied in time (applied %d): %w", idx, n.store.AppliedIndex(), ctx.Err())
		}
	}
}

// appliedThrough reports whether the FSM has applied every entry up to idx
// that reaches it. Raft never hands no-op and barrier entries to the FSM,
// so those are looked up in the log and skipped.
func (n *Node) appliedThrough(idx uint64) bool {
	applied := n.store.AppliedIndex()
	if applied >= idx {
		return true
	}
	if n.raft.AppliedIndex() < idx {
		return false
	}
	var l raft.Log
	for i := applied + 1; i <= idx; i++ {
		if err := n.parts.logs.GetLog(i, &l); err != nil {
			continue // compacted into a snapshot, hence applied
		}
		if l.Type == raft.LogCommand || l.Type == raft.LogConfiguration {
			return false
		}
	}
	return true
}

// goneHosts are the members this peer's gossip sees dead or departed: a
// leader must not place servers on them even before the log says so (a
// new leader's predecessor, typically).
func (n *Node) goneHosts() []string {
	var out []string
	for _, m := range n.counted(n.gossip.snapshot()) {
		if m.Status == MemberDead || m.Status == MemberLeft {
			out = append(out, m.Name)
		}
	}
	return out
}
