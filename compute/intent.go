package compute

import (
	"context"
	"fmt"
	"time"

	"github.com/corral-dev/corral/fsm"
)

// DefaultIntentLease bounds how long after proposing an action's intent
// the owner may still send its side effect (Config.IntentLease): a commit
// slower than that, or a host paused between the commit and the request,
// sends nothing, and the next attempt commits a new intent. Whoever resumes
// an action under an intent it did not commit itself (a new owner after a
// failover, this host after a restart) waits until the intent's lease is
// over, plus as long again as a margin, before it reads the backend to
// tell whether the side effect was taken. The wait counts from when the
// resumer first saw itself own the server, which is after the plan that
// moved it and so after the intent was proposed: once it is over, the old
// owner can no longer send.
const DefaultIntentLease = 3 * time.Second

// Lease is how long the side effect of a committed intent may still be
// sent.
type Lease struct{ Deadline time.Time }

// Context returns ctx ending at the lease's deadline: a request to the
// backend made with it is not sent once the lease is over.
func (l Lease) Context(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithDeadline(ctx, l.Deadline)
}

// intentMark is the last intent this manager proposed for a server.
type intentMark struct {
	epoch    uint64
	asked    time.Time // the action's RequestedAt
	step     string
	deadline time.Time
}

// BeginAction commits, at s's owner epoch, the intent to take the side
// effect step of s's action, with witness (what the backend shows of the
// server right now: when it shows something else, the side effect was
// taken). It returns the lease within which the side effect may be sent,
// or an error wrapping ErrIntent (and fsm.ErrFenced when the host lost the
// server), after which the caller must not send it.
func (h *Handle) BeginAction(ctx context.Context, s fsm.Server, step, witness string) (Lease, error) {
	m := h.m
	if s.Action == nil {
		return Lease{}, fmt.Errorf("%w: server %s has no action in progress", ErrIntent, s.ID)
	}
	if k, ok := m.c.(commandKnower); ok && !k.CommandKnown(fsm.CmdStartServerAction) {
		return Lease{}, fmt.Errorf("%w: not every live peer knows %s yet; the %s of server %s waits until every peer is upgraded",
			ErrIntent, fsm.CmdStartServerAction, s.Action.Kind, s.ID)
	}
	lease := m.cfg.IntentLease
	sent := time.Now()
	deadline := sent.Add(lease)
	m.mu.Lock()
	// Marked before the proposal: an intent whose commit this host never
	// hears of may still be in the log, with this lease.
	m.intents[s.ID] = intentMark{epoch: s.Epoch, asked: s.Action.RequestedAt, step: step, deadline: deadline}
	m.mu.Unlock()
	err := h.Commit(ctx, &fsm.StartServerAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: s.Action.Kind,
		RequestedAt: s.Action.RequestedAt, Step: step, Witness: witness})
	if err != nil {
		return Lease{}, fmt.Errorf("%w: %s of server %s at epoch %d: %w", ErrIntent, step, s.ID, s.Epoch, err)
	}
	if took := time.Since(sent); took >= lease {
		return Lease{}, fmt.Errorf("%w: the intent to %s server %s took %s to commit, longer than the %s lease",
			ErrIntent, step, s.ID, took.Round(time.Millisecond), lease)
	}
	return Lease{Deadline: deadline}, nil
}

// AwaitIntent blocks until the side effect of s's last intent can no
// longer be sent by whoever committed it: its lease is over, by this
// host's count when this manager proposed it, else counted from when this
// manager first saw itself own s at its epoch.
func (h *Handle) AwaitIntent(ctx context.Context, s fsm.Server) error {
	if s.Action == nil || s.Action.Intent == nil {
		return nil
	}
	until := h.m.intentSettles(s)
	if wait := time.Until(until); wait > 0 {
		h.m.log.Info("waiting for the lease of an earlier intent to end before reading the backend", "server", s.ID,
			"step", s.Action.Intent.Step, "intent_host", s.Action.Intent.Host, "intent_epoch", s.Action.Intent.Epoch, "wait", wait.Round(time.Millisecond))
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// intentSettles is when s's last intent can no longer be acted on.
func (m *Manager) intentSettles(s fsm.Server) time.Time {
	in, lease := s.Action.Intent, m.cfg.IntentLease
	m.mu.Lock()
	defer m.mu.Unlock()
	if mk, ok := m.intents[s.ID]; ok && in.Host == m.c.Name() && in.Epoch == mk.epoch && in.Step == mk.step &&
		s.Action.RequestedAt.Equal(mk.asked) {
		return mk.deadline.Add(lease)
	}
	seen, ok := m.seen[s.ID]
	if !ok || seen.epoch != s.Epoch {
		return time.Now().Add(2 * lease)
	}
	return seen.at.Add(2 * lease)
}

// Intent commits the task state of a build or delete step at s's epoch
// (spawning, deleting, ...) before its side effects: an error wraps
// ErrIntent, and the caller takes none of them.
func (h *Handle) Intent(ctx context.Context, s fsm.Server, task string) error {
	if err := h.SetTask(ctx, s, "", task, nil); err != nil {
		return fmt.Errorf("%w: %s of server %s at epoch %d: %w", ErrIntent, task, s.ID, s.Epoch, err)
	}
	return nil
}

// StartLease is the lease of an intent this host is about to propose for
// a side effect its driver tracks itself (a Neutron port's create): the
// request is made with the lease's Context, and not at all when Expired
// once the commit is back.
func (h *Handle) StartLease() Lease { return Lease{Deadline: time.Now().Add(h.m.cfg.IntentLease)} }

// Expired reports whether the lease is over.
func (l Lease) Expired() bool { return !time.Now().Before(l.Deadline) }

// AwaitSettled blocks until the side effect of an intent on s, pending in
// the log, can no longer be sent by whoever committed it: with mine (the
// deadline of this host's own lease for it, at s's epoch) a lease after
// that, else two leases after this manager first saw itself own s at its
// epoch, as AwaitIntent counts for actions.
func (h *Handle) AwaitSettled(ctx context.Context, s fsm.Server, mine time.Time) error {
	m, lease := h.m, h.m.cfg.IntentLease
	until := mine.Add(lease)
	if mine.IsZero() {
		m.mu.Lock()
		seen, ok := m.seen[s.ID]
		m.mu.Unlock()
		if ok && seen.epoch == s.Epoch {
			until = seen.at.Add(2 * lease)
		} else {
			until = time.Now().Add(2 * lease)
		}
	}
	wait := time.Until(until)
	if wait <= 0 {
		return nil
	}
	m.log.Info("waiting for the lease of an earlier intent to end before reading the backend", "server", s.ID, "wait", wait.Round(time.Millisecond))
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	return nil
}
