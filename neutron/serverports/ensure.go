package serverports

import (
	"context"
	"slices"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
)

// Ensure gives s a Neutron port for each of its requested networks and
// returns their ids in the order requested (Attach then binds each to
// the host). A port the user passed in is taken over (device, owner, vnic
// type and, but for a bare-metal port, host updated) and remembered as
// the user's; otherwise the port recorded for the network, or one Neutron
// lists with the server as its device (created by an owner that did not
// live to record it), is used before a new one is created.
func (p *Ports) Ensure(ctx context.Context, h *compute.Handle, s fsm.Server, host string) ([]string, error) {
	if err := p.Known(h, s); err != nil {
		return nil, err
	}
	e := p.ensurer(ctx, h, s, host, nil)
	for _, g := range e.rec.Requested {
		e.groups = append(e.groups, g.ID)
	}
	out := make([]string, 0, len(s.Networks))
	for _, want := range s.Networks {
		id, err := e.one(want)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

// EnsureInterface gives s the port of its os-interface attach req (a new
// port on req's network, with its fixed address if any, or the user's
// port taken over) and returns its id; Attach then binds it. A port
// recorded since the request (not among the ports the server had then),
// or one Neutron lists with the server as its device and no record, is
// the request's, made by an earlier attempt: no second port.
func (p *Ports) EnsureInterface(ctx context.Context, h *compute.Handle, s fsm.Server, req fsm.InterfaceRequest, host string) (string, error) {
	if err := p.Known(h, s); err != nil {
		return "", err
	}
	e := p.ensurer(ctx, h, s, host, req.Had)
	if req.PortID != "" {
		e.user[req.PortID] = true
		return e.one(fsm.Network{Port: req.PortID})
	}
	return e.one(fsm.Network{UUID: req.NetworkID, FixedIP: req.FixedIP})
}

// ensurer finds or makes the ports of one server, each once; groups are
// the security groups of the ports it creates (none: Neutron's default).
type ensurer struct {
	groups     []string
	p          *Ports
	ctx        context.Context
	h          *compute.Handle
	s          fsm.Server
	host       string
	rec        fsm.ServerNet
	user, used map[string]bool
	listed     []neutron.Port
	haveListed bool
	names      map[string]string
}

// ensurer starts finding s's ports, those in used being another's.
func (p *Ports) ensurer(ctx context.Context, h *compute.Handle, s fsm.Server, host string, used []string) *ensurer {
	e := &ensurer{p: p, ctx: ctx, h: h, s: s, host: host, rec: h.Store().ServerNet(s.ID), user: userPorts(s),
		used: map[string]bool{}, names: map[string]string{}}
	for _, id := range used {
		e.used[id] = true
	}
	return e
}

func (e *ensurer) netName(id string) (string, error) {
	if n, ok := e.names[id]; ok {
		return n, nil
	}
	if n, ok := e.p.knownNetwork(id); ok {
		e.names[id] = n
		return n, nil
	}
	n, err := e.p.nt.Network(e.ctx, id)
	if err != nil {
		return "", portError(err, "reading network "+id+" of server "+e.s.ID)
	}
	e.names[id] = n.Name
	e.p.rememberNetwork(id, n.Name)
	return n.Name, nil
}

// one returns the port of want, found or made, recorded.
func (e *ensurer) one(want fsm.Network) (string, error) {
	p, ctx, h, s := e.p, e.ctx, e.h, e.s
	if want.Port != "" {
		if _, ok := e.rec.Port(want.Port); !ok {
			cur, err := p.nt.Port(ctx, want.Port)
			if err != nil {
				return "", portError(err, "reading port "+want.Port)
			}
			if cur.DeviceID != "" && cur.DeviceID != s.ID {
				// Taken since the API checked it: Nova's PortInUse.
				return "", compute.Permanent("Port %s is still in use.", want.Port)
			}
			if err := p.Intent(ctx, h, s, fsm.PortStepBind, "", want.Port); err != nil {
				return "", err
			}
			owner := DeviceOwner
			u := neutron.PortUpdate{DeviceID: &s.ID, DeviceOwner: &owner, VNICType: p.vnic}
			if !p.bindsAfterPlug() {
				u.HostID = &e.host // a bare-metal port's comes at Attach, once plugged
			}
			port, err := p.nt.UpdatePort(ctx, want.Port, u)
			if err != nil {
				return "", portError(err, "taking over port "+want.Port)
			}
			name, err := e.netName(port.NetworkID)
			if err != nil {
				return "", err
			}
			if err := p.record(ctx, h, s, port, name, true); err != nil {
				return "", err
			}
		}
		e.used[want.Port] = true
		return want.Port, nil
	}
	if i := slices.IndexFunc(e.rec.Ports, func(q fsm.ServerPort) bool {
		return !q.User && q.NetworkID == want.UUID && !e.used[q.ID]
	}); i >= 0 {
		e.used[e.rec.Ports[i].ID] = true
		return e.rec.Ports[i].ID, nil
	}
	name, err := e.netName(want.UUID)
	if err != nil {
		return "", err
	}
	if !e.haveListed {
		if in := e.rec.Intent; in != nil && in.Step == fsm.PortStepCreate {
			// A create may still be in flight: the port it makes shows
			// in the listing only once no one can send it any more.
			if err := h.AwaitSettled(ctx, s, p.ownLease(s, in)); err != nil {
				return "", err
			}
		}
		if e.listed, err = p.nt.Ports(ctx, neutron.PortFilter{DeviceID: s.ID}); err != nil {
			return "", err
		}
		e.haveListed = true
	}
	var port neutron.Port
	if i := slices.IndexFunc(e.listed, func(q neutron.Port) bool {
		_, recorded := e.rec.Port(q.ID)
		return q.NetworkID == want.UUID && !e.used[q.ID] && !recorded && !e.user[q.ID]
	}); i >= 0 {
		port = e.listed[i]
		p.log.Info("resuming with the port an earlier attempt created", "server", s.ID, "port", port.ID, "network", port.NetworkID)
	} else {
		if port, err = p.create(ctx, h, s, want, e.groups); err != nil {
			return "", err
		}
	}
	if err := p.record(ctx, h, s, port, name, false); err != nil {
		return "", err
	}
	e.used[port.ID] = true
	return port.ID, nil
}
