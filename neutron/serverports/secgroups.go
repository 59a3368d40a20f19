package serverports

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
)

// The security groups of a server's ports: each port is recorded with
// its groups (ids and names, so that a view lists them without Neutron),
// a boot's ports are created in the groups it asked for, and the owner
// carries out Nova's addSecurityGroup and removeSecurityGroup on every
// port of the server, each port's change after its intent at the owner's
// epoch.

// groupCommands are the commands that keep the ports' groups: the groups
// are recorded only once every live peer knows them.
var groupCommands = []fsm.CommandType{fsm.CmdRequestSecurityGroupAction, fsm.CmdFinishSecurityGroupAction}

func groupsKept(h *compute.Handle) bool {
	for _, t := range groupCommands {
		if !h.Known(t) {
			return false
		}
	}
	return true
}

// maxGroupNames bounds the names of security groups a host remembers.
const maxGroupNames = 4096

// groupRefs names the security groups ids of one of s's ports: by the
// groups its boot asked for, the names this host read last, or else one
// listing of the rest. A group Neutron no longer lists keeps no name (a
// view shows its id, as Nova).
func (p *Ports) groupRefs(ctx context.Context, h *compute.Handle, s fsm.Server, ids []string) ([]fsm.SecurityGroupRef, error) {
	if len(ids) == 0 {
		return []fsm.SecurityGroupRef{}, nil
	}
	if len(ids) > fsm.MaxSecurityGroups {
		return nil, compute.Permanent("a port of server %s has %d security groups, more than %d", s.ID, len(ids), fsm.MaxSecurityGroups)
	}
	names := map[string]string{}
	for _, g := range h.Store().ServerNet(s.ID).Requested {
		names[g.ID] = g.Name
	}
	var unknown []string
	p.mu.Lock()
	for _, id := range ids {
		if _, ok := names[id]; ok {
			continue
		}
		if n, ok := p.groups[id]; ok {
			names[id] = n
		} else {
			unknown = append(unknown, id)
		}
	}
	p.mu.Unlock()
	if len(unknown) > 0 {
		found, err := p.nt.SecurityGroups(ctx, neutron.SecurityGroupFilter{IDs: unknown})
		if err != nil {
			return nil, fmt.Errorf("naming the security groups of a port of server %s: %w", s.ID, err)
		}
		p.mu.Lock()
		if len(p.groups)+len(found) > maxGroupNames {
			clear(p.groups)
		}
		for _, g := range found {
			names[g.ID] = g.Name
			p.groups[g.ID] = g.Name
		}
		p.mu.Unlock()
	}
	out := make([]fsm.SecurityGroupRef, 0, len(ids))
	for _, id := range slices.Compact(slices.Clone(ids)) {
		out = append(out, fsm.SecurityGroupRef{ID: id, Name: names[id]})
	}
	return out, nil
}

// Nova's answers to a security group change that fails.
const (
	faultNoPorts       = "instance_id %s could not be found as device id on any ports"
	faultCannotApply   = "Network requires port_security_enabled and subnet associated in order to apply security groups."
	faultNotAssociated = "Security group %s not associated with the instance %s"
)

// ChangeSecurityGroups carries out s's security group request req, as
// Nova's security_group_api does it: an add gives the group to every port
// of the server (400 when a port has no port security or no address, and
// then no port is changed), a remove takes it off every port that has it
// (404 when none had it). It returns the groups each of the server's
// recorded ports has then, with the failure's Nova code and message. A
// port already changed by an earlier attempt is not changed again; an
// error is a transient one (retried) or a refused intent (the worker
// stops).
func (p *Ports) ChangeSecurityGroups(ctx context.Context, h *compute.Handle, s fsm.Server, req fsm.SecurityGroupRequest) (compute.SecurityGroupOutcome, error) {
	rec := h.Store().ServerNet(s.ID)
	listed, err := p.nt.Ports(ctx, neutron.PortFilter{DeviceID: s.ID})
	if err != nil {
		return compute.SecurityGroupOutcome{}, err
	}
	var ports []neutron.Port
	for _, q := range listed {
		if _, ok := rec.Port(q.ID); ok {
			ports = append(ports, q)
		}
	}
	if len(ports) == 0 {
		return compute.SecurityGroupOutcome{Code: 404, Fault: fmt.Sprintf(faultNoPorts, s.ID)}, nil
	}
	gid := req.Group.ID
	switch req.Kind {
	case fsm.ActionAddSecurityGroup:
		for _, q := range ports {
			if !q.SecurityGroupsApply() {
				return p.outcome(ctx, h, s, ports, 400, faultCannotApply)
			}
		}
		for i, q := range ports {
			if slices.Contains(q.SecurityGroups, gid) {
				continue
			}
			groups := append(slices.Clone(q.SecurityGroups), gid)
			changed, err := p.setGroups(ctx, h, s, q.ID, groups)
			if err != nil {
				return p.failed(ctx, h, s, ports, err)
			}
			ports[i] = changed
		}
	case fsm.ActionRemoveSecurityGroup:
		found := false
		for i, q := range ports {
			was, _ := rec.Port(q.ID)
			found = found || slices.ContainsFunc(was.SecurityGroups, func(g fsm.SecurityGroupRef) bool { return g.ID == gid })
			if !slices.Contains(q.SecurityGroups, gid) {
				continue
			}
			found = true
			groups := slices.DeleteFunc(slices.Clone(q.SecurityGroups), func(g string) bool { return g == gid })
			changed, err := p.setGroups(ctx, h, s, q.ID, groups)
			if err != nil {
				return p.failed(ctx, h, s, ports, err)
			}
			ports[i] = changed
		}
		if !found {
			name := req.Group.Name
			if name == "" {
				name = gid
			}
			return p.outcome(ctx, h, s, ports, 404, fmt.Sprintf(faultNotAssociated, name, s.ID))
		}
	default:
		return compute.SecurityGroupOutcome{}, compute.Permanent("security group action %q is unknown", req.Kind)
	}
	return p.outcome(ctx, h, s, ports, 0, "")
}

// setGroups gives port id the groups, after its intent at s's epoch.
func (p *Ports) setGroups(ctx context.Context, h *compute.Handle, s fsm.Server, id string, groups []string) (neutron.Port, error) {
	if err := p.Intent(ctx, h, s, fsm.PortStepSecurityGroups, "", id); err != nil {
		return neutron.Port{}, err
	}
	return p.nt.UpdatePort(ctx, id, neutron.PortUpdate{SecurityGroups: &groups})
}

// failed is the outcome of a port change Neutron refused (400: cannot be
// applied, 409: a conflict, both Nova's answers), ports as they were (a
// refused change changed nothing); any other error is returned to be
// retried, or stops the worker.
func (p *Ports) failed(ctx context.Context, h *compute.Handle, s fsm.Server, ports []neutron.Port, err error) (compute.SecurityGroupOutcome, error) {
	switch {
	case errors.Is(err, neutron.ErrInvalid):
		return p.outcome(ctx, h, s, ports, 400, neutron.Message(err))
	case errors.Is(err, neutron.ErrConflict):
		return p.outcome(ctx, h, s, ports, 409, neutron.Message(err))
	}
	return compute.SecurityGroupOutcome{}, err
}

// outcome is the request's outcome: the groups of each port, named.
func (p *Ports) outcome(ctx context.Context, h *compute.Handle, s fsm.Server, ports []neutron.Port, code int, fault string) (compute.SecurityGroupOutcome, error) {
	out := compute.SecurityGroupOutcome{Code: code, Fault: fault}
	for _, q := range ports {
		refs, err := p.groupRefs(ctx, h, s, q.SecurityGroups)
		if err != nil {
			return compute.SecurityGroupOutcome{}, err
		}
		out.Ports = append(out.Ports, fsm.PortSecurityGroups{PortID: q.ID, Groups: refs})
	}
	return out, nil
}
