package compute

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/corral-dev/corral/fsm"
)

// Handle gives a virt driver the manager's fenced ways to commit.
type Handle struct{ m *Manager }

// Host is the name of this host.
func (h *Handle) Host() string { return h.m.c.Name() }

// Store is the replicated state.
func (h *Handle) Store() *fsm.Store { return h.m.c.Store() }

// Log is the manager's logger.
func (h *Handle) Log() *slog.Logger { return h.m.log }

// Commit proposes an owner command; fenced or business errors come back.
func (h *Handle) Commit(ctx context.Context, cmd fsm.Command) error {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, err := h.m.c.Propose(cctx, cmd)
	return err
}

// SetTask commits the owner's progress at its epoch.
func (h *Handle) SetTask(ctx context.Context, s fsm.Server, status fsm.ServerStatus, task string, fault *fsm.Fault) error {
	return h.Commit(ctx, &fsm.SetServerTask{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Status: status, TaskState: task, Fault: fault})
}

// commandKnower is implemented by a cluster that can tell whether every
// live peer can apply a command type (cluster.Node).
type commandKnower interface {
	CommandKnown(t fsm.CommandType) bool
}

// Known reports whether every live peer can apply command type t (true
// for a cluster that cannot tell).
func (h *Handle) Known(t fsm.CommandType) bool {
	k, ok := h.m.c.(commandKnower)
	return !ok || k.CommandKnown(t)
}

// Reserve commits the node reserved for s (and its Ironic allocation, if
// any). With then set, the same entry also moves the server to that task
// state (fsm.ReserveNodeAndTask) once every peer can apply it; it reports
// whether it did, and when it did not the caller commits its next intent
// on its own.
func (h *Handle) Reserve(ctx context.Context, s fsm.Server, node, allocation, then string) (bool, error) {
	rn := fsm.ReserveNode{ServerID: s.ID, Host: s.Host, Epoch: s.Epoch, NodeUUID: node, AllocationUUID: allocation}
	if k, ok := h.m.c.(commandKnower); ok && then != "" && k.CommandKnown(fsm.CmdReserveNodeAndTask) {
		return true, h.Commit(ctx, &fsm.ReserveNodeAndTask{ReserveNode: rn, TaskState: then})
	}
	return false, h.Commit(ctx, &rn)
}

// fail puts a server in ERROR with a fault an operator can act on.
func (h *Handle) fail(ctx context.Context, s fsm.Server, msg string) {
	h.m.m.builds.WithLabelValues("error").Inc()
	h.m.log.Error("server failed", "server", s.ID, "fault", msg)
	if err := h.SetTask(ctx, s, fsm.StatusError, "", &fsm.Fault{Code: 500, Message: msg}); err != nil {
		h.m.log.Error("recording the fault failed", "server", s.ID, "err", err)
	}
}

// Reread returns the committed server, an fsm.ErrFenced error if it is no
// longer ours at this epoch, or (building) a transient error when a delete
// was requested meanwhile, so the next attempt deletes instead.
func (h *Handle) Reread(s fsm.Server, building bool) (fsm.Server, error) {
	cur, err := h.m.c.Store().Server(s.ID)
	if err != nil {
		return s, ErrStop
	}
	if cur.Host != s.Host || cur.Epoch != s.Epoch {
		return cur, fmt.Errorf("%w: server %s moved to %s at epoch %d", fsm.ErrFenced, s.ID, cur.Host, cur.Epoch)
	}
	if building && cur.TaskState == fsm.TaskDeleting {
		return cur, fmt.Errorf("delete requested during build of %s: switching to delete", s.ID)
	}
	return cur, nil
}
