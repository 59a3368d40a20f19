package compute

import (
	"context"
	"errors"
	"fmt"

	"github.com/corral-dev/corral/fsm"
)

// Actor is implemented by a virt driver that carries out server actions
// (stop, start, reboot, rebuild). Act does s.Action on the backend and
// returns when it is done. Before each side effect it commits the intent
// (Handle.BeginAction) with a witness read from the backend, and sends the
// side effect only within the lease the intent gives; an intent already in
// the log for that side effect (s.Action.Intent, from an earlier attempt,
// this host before a restart, or the previous owner) is judged by the
// witness: changed means the side effect was taken and is never taken
// again; unchanged, Act waits out the intent's lease (Handle.AwaitIntent)
// and reads the backend once more before it commits its own. A
// PermanentError ends the action with the server in ERROR.
type Actor interface {
	Act(ctx context.Context, h *Handle, s fsm.Server) error
}

// InterfaceActor is implemented by a virt driver that attaches network
// interfaces to a running server and detaches them (Nova's os-interface),
// the request in the server's port record (fsm.ServerNet.Interface).
// AttachInterface gives the server the port of the request (created on
// its network, or the user's taken over) and returns its id;
// DetachInterface takes the request's port off the server. Each side
// effect comes after its port intent at the owner's epoch; a
// PermanentError is the request's failure, which leaves the server as it
// was.
type InterfaceActor interface {
	AttachInterface(ctx context.Context, h *Handle, s fsm.Server, req fsm.InterfaceRequest) (string, error)
	DetachInterface(ctx context.Context, h *Handle, s fsm.Server, req fsm.InterfaceRequest) error
}

// SecurityGroupActor is implemented by a virt driver whose servers have
// Neutron ports: ChangeSecurityGroups carries out the server's security
// group request (fsm.ServerNet.SecurityGroup) on its ports, each change
// after its port intent at the owner's epoch, and returns the outcome.
// An error is retried, or stops the worker when an intent was refused.
type SecurityGroupActor interface {
	ChangeSecurityGroups(ctx context.Context, h *Handle, s fsm.Server, req fsm.SecurityGroupRequest) (SecurityGroupOutcome, error)
}

// SecurityGroupOutcome is the outcome of a security group request: the
// groups of each of the server's ports after it, and when it failed,
// Nova's answer (Code, an HTTP status, and Fault).
type SecurityGroupOutcome struct {
	Ports []fsm.PortSecurityGroups
	Code  int
	Fault string
}

// act carries out the action a user committed (the intent in the log) and
// commits its outcome at this host's epoch.
func (m *Manager) act(ctx context.Context, h *Handle, s fsm.Server) error {
	if s.Action == nil {
		m.log.Error("server is in an action's task state without the action; leaving it", "server", s.ID, "task", s.TaskState)
		return ErrStop
	}
	switch s.Action.Kind {
	case fsm.ActionAttachInterface, fsm.ActionDetachInterface:
		return m.actInterface(ctx, h, s)
	case fsm.ActionAddSecurityGroup, fsm.ActionRemoveSecurityGroup:
		return m.actSecurityGroup(ctx, h, s)
	}
	var err error
	if a, ok := m.virt.(Actor); ok {
		err = a.Act(ctx, h, s)
	} else {
		err = Permanent("the %s driver cannot %s a server", m.virt.Kind(), s.Action.Kind)
	}
	var pe *PermanentError
	if err != nil && !errors.As(err, &pe) {
		return err // a failed intent or a fenced error stops the worker; others are retried from the log and the backend
	}
	if pe == nil && s.Action.Kind == fsm.ActionRebuild && s.Status == fsm.StatusShutoff && h.Known(fsm.CmdStopAfterRebuild) {
		return m.stopAfterRebuild(ctx, h, s)
	}
	fin := &fsm.FinishServerAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: s.Action.Kind, RequestedAt: s.Action.RequestedAt}
	if pe != nil {
		fin.Fault = &fsm.Fault{Code: 500, Message: pe.Msg}
	}
	if err := h.Commit(ctx, fin); err != nil {
		// Retried: the next attempt finds the side effects taken (their
		// witnesses changed) and only commits the outcome again.
		return err
	}
	m.m.actions.WithLabelValues(s.Action.Kind, map[bool]string{true: "error", false: "done"}[pe != nil]).Inc()
	m.log.Info("server action done", "server", s.ID, "action", s.Action.Kind, "failed", pe != nil)
	return nil
}

// stopAfterRebuild ends the rebuild of a stopped server as Nova's compute
// manager does: the redeploy done, the server is ACTIVE and powering-off
// (fsm.StopAfterRebuild), and the driver powers it off like a stop.
// Retried, the rebuild finds its redeploy taken and only commits this
// again.
func (m *Manager) stopAfterRebuild(ctx context.Context, h *Handle, s fsm.Server) error {
	err := h.Commit(ctx, &fsm.StopAfterRebuild{ID: s.ID, Host: s.Host, Epoch: s.Epoch, RequestedAt: s.Action.RequestedAt})
	if err != nil {
		return err
	}
	m.m.actions.WithLabelValues(s.Action.Kind, "done").Inc()
	m.log.Info("server rebuilt; stopping it again, as it was stopped", "server", s.ID)
	cur, err := h.Reread(s, false)
	if err != nil {
		return err
	}
	return m.act(ctx, h, cur)
}

// maxInterfaceFault bounds the fault an interface action commits (the
// fsm refuses a longer one).
const maxInterfaceFault = 1024

// actInterface carries out an interface attach or detach and commits its
// outcome: the port attached, or the failure, the server as it was.
func (m *Manager) actInterface(ctx context.Context, h *Handle, s fsm.Server) error {
	kind := s.Action.Kind
	req := h.Store().ServerNet(s.ID).Interface
	var port string
	var err error
	ia, ok := m.virt.(InterfaceActor)
	switch {
	case req == nil || req.Kind != kind || !req.RequestedAt.Equal(s.Action.RequestedAt):
		err = Permanent("the %s of server %s has no request", kind, s.ID)
	case !ok:
		err = Permanent("the %s driver cannot %s", m.virt.Kind(), kind)
	case kind == fsm.ActionAttachInterface:
		port, err = ia.AttachInterface(ctx, h, s, *req)
	default:
		err = ia.DetachInterface(ctx, h, s, *req)
	}
	var pe *PermanentError
	if err != nil && !errors.As(err, &pe) {
		return err
	}
	fin := &fsm.FinishInterfaceAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: kind, RequestedAt: s.Action.RequestedAt, PortID: port}
	if pe != nil {
		fin.Fault = pe.Msg
		if len(fin.Fault) > maxInterfaceFault {
			fin.Fault = fin.Fault[:maxInterfaceFault]
		}
	}
	if err := h.Commit(ctx, fin); err != nil {
		return err
	}
	m.m.actions.WithLabelValues(kind, map[bool]string{true: "error", false: "done"}[pe != nil]).Inc()
	m.log.Info("server interface action done", "server", s.ID, "action", kind, "port", port, "failed", pe != nil)
	return nil
}

// actSecurityGroup carries out a security group request and commits its
// outcome; the server keeps its status either way.
func (m *Manager) actSecurityGroup(ctx context.Context, h *Handle, s fsm.Server) error {
	kind := s.Action.Kind
	req := h.Store().ServerNet(s.ID).SecurityGroup
	var out SecurityGroupOutcome
	sa, ok := m.virt.(SecurityGroupActor)
	switch {
	case req == nil || req.Kind != kind || !req.RequestedAt.Equal(s.Action.RequestedAt):
		out = SecurityGroupOutcome{Code: 500, Fault: fmt.Sprintf("the %s of server %s has no request", kind, s.ID)}
	case !ok:
		out = SecurityGroupOutcome{Code: 400, Fault: fmt.Sprintf("the %s driver has no security groups", m.virt.Kind())}
	default:
		var err error
		if out, err = sa.ChangeSecurityGroups(ctx, h, s, *req); err != nil {
			var pe *PermanentError
			if !errors.As(err, &pe) {
				return err
			}
			out = SecurityGroupOutcome{Code: 500, Fault: pe.Msg}
		}
	}
	if len(out.Fault) > maxInterfaceFault {
		out.Fault = out.Fault[:maxInterfaceFault]
	}
	fin := &fsm.FinishSecurityGroupAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: kind, RequestedAt: s.Action.RequestedAt,
		Ports: out.Ports, Code: out.Code, Fault: out.Fault}
	if err := h.Commit(ctx, fin); err != nil {
		return err
	}
	m.m.actions.WithLabelValues(kind, map[bool]string{true: "error", false: "done"}[out.Code != 0]).Inc()
	m.log.Info("server security group action done", "server", s.ID, "action", kind, "code", out.Code, "fault", out.Fault)
	return nil
}
