package driver

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
)

// Neutron is what the driver needs from Neutron; *neutron.Client
// implements it. With it (Config.Neutron), every requested network of a
// server gets a Neutron port, attached as a VIF of the server's node, as
// Nova's Ironic driver does it; without it the VIF ids are corral's own
// (fsm.Server.VIFs).
type Neutron interface {
	Network(ctx context.Context, id string) (neutron.Network, error)
	Port(ctx context.Context, id string) (neutron.Port, error)
	CreatePort(ctx context.Context, p neutron.PortCreate) (neutron.Port, error)
	Ports(ctx context.Context, f neutron.PortFilter) ([]neutron.Port, error)
	UpdatePort(ctx context.Context, id string, u neutron.PortUpdate) (neutron.Port, error)
	UnbindPort(ctx context.Context, id string) (neutron.Port, error)
	DeletePort(ctx context.Context, id string) error
}

var _ Neutron = (*neutron.Client)(nil)

// DeviceOwner is the device_owner of the ports corral creates or takes
// over for a server: Nova's compute:<availability zone>.
const DeviceOwner = "compute:nova"

// portCommands are the commands of the port steps: each is sent only
// once every live peer can apply it.
var portCommands = []fsm.CommandType{fsm.CmdSetPortIntent, fsm.CmdRecordServerPort, fsm.CmdForgetServerPort}

func (d *Driver) portsKnown(h *compute.Handle, s fsm.Server) error {
	for _, t := range portCommands {
		if !h.Known(t) {
			return fmt.Errorf("%w: not every live peer knows %s yet; the Neutron ports of server %s wait until every peer is upgraded",
				compute.ErrIntent, t, s.ID)
		}
	}
	return nil
}

// portIntent commits, at s's epoch, the intent of one Neutron or VIF side
// effect; an error wraps compute.ErrIntent and the caller takes none.
func (d *Driver) portIntent(ctx context.Context, h *compute.Handle, s fsm.Server, step, network, port string) error {
	err := h.Commit(ctx, &fsm.SetPortIntent{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Step: step, NetworkID: network, PortID: port})
	if err != nil {
		return fmt.Errorf("%w: port %s (network %q, port %q) of server %s at epoch %d: %w",
			compute.ErrIntent, step, network, port, s.ID, s.Epoch, err)
	}
	return nil
}

// recordPort commits the port as one of s's.
func (d *Driver) recordPort(ctx context.Context, h *compute.Handle, s fsm.Server, p neutron.Port, netName string, user bool) error {
	sp := fsm.ServerPort{ID: p.ID, NetworkID: p.NetworkID, NetworkName: netName, MAC: p.MACAddress, User: user}
	for _, ip := range p.FixedIPs {
		a, err := netip.ParseAddr(ip.IPAddress)
		if err != nil || len(sp.FixedIPs) == fsm.MaxPortIPs {
			continue
		}
		v := 4
		if a.Is6() {
			v = 6
		}
		sp.FixedIPs = append(sp.FixedIPs, fsm.PortIP{Address: a.String(), Version: v})
	}
	return h.Commit(ctx, &fsm.RecordServerPort{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Port: sp})
}

// ensurePorts gives s a Neutron port for each of its requested networks
// and returns their ids in the order requested (the attach step binds
// them to the node, once attached). A port the user passed in is taken
// over (device, owner and vnic type updated) and remembered as the user's; otherwise the port recorded for the
// network, or one Neutron lists with the server as its device (created
// by an owner that did not live to record it), is used before a new
// one is created.
func (d *Driver) ensurePorts(ctx context.Context, h *compute.Handle, s fsm.Server) ([]string, error) {
	if err := d.portsKnown(h, s); err != nil {
		return nil, err
	}
	rec := h.Store().ServerNet(s.ID)
	user := userPorts(s)
	used := map[string]bool{}
	var listed []neutron.Port
	haveListed := false
	names := map[string]string{}
	netName := func(id string) (string, error) {
		if n, ok := names[id]; ok {
			return n, nil
		}
		n, err := d.nt.Network(ctx, id)
		if err != nil {
			return "", fmt.Errorf("network %s of server %s: %w", id, s.ID, err)
		}
		names[id] = n.Name
		return n.Name, nil
	}
	owner, vnic := DeviceOwner, neutron.VNICBaremetal
	out := make([]string, 0, len(s.Networks))
	for _, want := range s.Networks {
		if want.Port != "" {
			if _, ok := rec.Port(want.Port); !ok {
				cur, err := d.nt.Port(ctx, want.Port)
				if err != nil {
					return nil, d.portError(err, "reading port "+want.Port)
				}
				if cur.DeviceID != "" && cur.DeviceID != s.ID {
					// Taken since the API checked it: Nova's PortInUse.
					return nil, compute.Permanent("Port %s is still in use.", want.Port)
				}
				if err := d.portIntent(ctx, h, s, fsm.PortStepBind, "", want.Port); err != nil {
					return nil, err
				}
				// The host comes at the attach step, after the VIF attach.
				p, err := d.nt.UpdatePort(ctx, want.Port, neutron.PortUpdate{DeviceID: &s.ID, DeviceOwner: &owner,
					VNICType: vnic})
				if err != nil {
					return nil, d.portError(err, "taking over port "+want.Port)
				}
				name, err := netName(p.NetworkID)
				if err != nil {
					return nil, err
				}
				if err := d.recordPort(ctx, h, s, p, name, true); err != nil {
					return nil, err
				}
			}
			used[want.Port] = true
			out = append(out, want.Port)
			continue
		}
		if i := slices.IndexFunc(rec.Ports, func(p fsm.ServerPort) bool {
			return !p.User && p.NetworkID == want.UUID && !used[p.ID]
		}); i >= 0 {
			used[rec.Ports[i].ID] = true
			out = append(out, rec.Ports[i].ID)
			continue
		}
		name, err := netName(want.UUID)
		if err != nil {
			return nil, err
		}
		if !haveListed {
			if in := rec.Intent; in != nil && in.Step == fsm.PortStepCreate {
				// A create may still be in flight: the port it makes shows
				// in the listing only once no one can send it any more.
				if err := h.AwaitSettled(ctx, s, d.ownLease(s, in)); err != nil {
					return nil, err
				}
			}
			if listed, err = d.nt.Ports(ctx, neutron.PortFilter{DeviceID: s.ID}); err != nil {
				return nil, err
			}
			haveListed = true
		}
		var p neutron.Port
		if i := slices.IndexFunc(listed, func(p neutron.Port) bool {
			_, recorded := rec.Port(p.ID)
			return p.NetworkID == want.UUID && !used[p.ID] && !recorded && !user[p.ID]
		}); i >= 0 {
			p = listed[i]
			d.log.Info("resuming with the port an earlier attempt created", "server", s.ID, "port", p.ID, "network", p.NetworkID)
		} else {
			if p, err = d.createPort(ctx, h, s, want.UUID); err != nil {
				return nil, err
			}
		}
		if err := d.recordPort(ctx, h, s, p, name, false); err != nil {
			return nil, err
		}
		used[p.ID] = true
		out = append(out, p.ID)
	}
	return out, nil
}

// createPort creates s's port on network, after its intent, within the
// intent's lease: a create is the one port step that is not idempotent,
// so whoever resumes after a pending create intent waits for the lease to
// end (AwaitSettled) and then finds the port by its device. The port is
// created without a host (the quick create); the attach step binds it.
func (d *Driver) createPort(ctx context.Context, h *compute.Handle, s fsm.Server, network string) (neutron.Port, error) {
	lease := h.StartLease()
	d.markLease(s, lease)
	if err := d.portIntent(ctx, h, s, fsm.PortStepCreate, network, ""); err != nil {
		return neutron.Port{}, err
	}
	if lease.Expired() {
		return neutron.Port{}, fmt.Errorf("%w: the intent to create a port of server %s took longer than its lease", compute.ErrIntent, s.ID)
	}
	lctx, cancel := lease.Context(ctx)
	defer cancel()
	p, err := d.nt.CreatePort(lctx, neutron.PortCreate{NetworkID: network, ProjectID: s.ProjectID,
		DeviceID: s.ID, DeviceOwner: DeviceOwner, VNICType: neutron.VNICBaremetal})
	if err != nil {
		return p, d.portError(err, "creating a port on network "+network)
	}
	return p, nil
}

// leaseMark is the lease of this host's last create intent for a server.
type leaseMark struct {
	epoch    uint64
	deadline time.Time
}

func (d *Driver) markLease(s fsm.Server, l compute.Lease) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.leases == nil {
		d.leases = map[string]leaseMark{}
	}
	d.leases[s.ID] = leaseMark{epoch: s.Epoch, deadline: l.Deadline}
}

// ownLease is the deadline of this host's lease for the pending intent
// in, when this host proposed it at s's epoch (zero otherwise).
func (d *Driver) ownLease(s fsm.Server, in *fsm.PortIntent) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	mk, ok := d.leases[s.ID]
	if !ok || mk.epoch != s.Epoch || in.Host != s.Host || in.Epoch != s.Epoch {
		return time.Time{}
	}
	return mk.deadline
}

// bindPort gives the port the node as its host, with vnic type baremetal
// (idempotent). It runs after the VIF attach: a mechanism driver that
// binds the port (networking-baremetal) makes Neutron refuse the MAC the
// attach puts on it, and a port without a host costs Neutron no binding
// attempt when the attach changes its MAC.
//
// A port whose binding to the node Neutron has already tried is left as
// it is, bound or binding_failed: a binding no mechanism driver can make
// costs Neutron ten attempts, and a retry after an answer lost to a busy
// Neutron would ask for it again. One with the host stored but no
// binding tried (unbound: Neutron failed half way) is asked again.
func (d *Driver) bindPort(ctx context.Context, id, node string) error {
	if p, err := d.nt.Port(ctx, id); err == nil && p.HostID == node && p.VNICType == neutron.VNICBaremetal &&
		p.VIFType != "" && p.VIFType != neutron.VIFUnbound {
		return nil
	}
	_, err := d.nt.UpdatePort(ctx, id, neutron.PortUpdate{HostID: &node, VNICType: neutron.VNICBaremetal})
	if err != nil {
		return d.portError(err, "binding port "+id+" to node "+node)
	}
	return nil
}

// portError ends the build for what Neutron will never accept (a network
// or port gone, a request refused), and is retried otherwise.
func (d *Driver) portError(err error, what string) error {
	switch {
	case errors.Is(err, neutron.ErrNotFound), errors.Is(err, neutron.ErrInvalid), errors.Is(err, neutron.ErrConflict):
		return compute.Permanent("Neutron refused %s: %v", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// releasePorts, once the node is undeployed (or was never reserved),
// detaches what VIFs the node still carries, deletes the ports corral
// created for the server and gives back the user's, each after its
// intent, and forgets each once done. node "" means no node.
func (d *Driver) releasePorts(ctx context.Context, h *compute.Handle, s fsm.Server, node string) error {
	if err := d.portsKnown(h, s); err != nil {
		return err
	}
	rec := h.Store().ServerNet(s.ID)
	if node != "" {
		vifs, err := d.ir.ListVIFs(ctx, node)
		if err != nil {
			return err
		}
		for _, vif := range vifs {
			if err := d.portIntent(ctx, h, s, fsm.PortStepDetach, "", vif); err != nil {
				return err
			}
			if err := d.ir.DetachVIF(ctx, node, vif); err != nil {
				return err
			}
		}
	}
	if in := rec.Intent; in != nil && in.Step == fsm.PortStepCreate {
		// A create may still be in flight: list once its port would show.
		if err := h.AwaitSettled(ctx, s, d.ownLease(s, in)); err != nil {
			return err
		}
	}
	listed, err := d.nt.Ports(ctx, neutron.PortFilter{DeviceID: s.ID})
	if err != nil {
		return err
	}
	ports := slices.Clone(rec.Ports)
	user := userPorts(s)
	for _, p := range listed {
		if _, ok := rec.Port(p.ID); !ok {
			// Created or taken over by an attempt that did not live to
			// record it: the user's is given back, never deleted.
			ports = append(ports, fsm.ServerPort{ID: p.ID, NetworkID: p.NetworkID, User: user[p.ID]})
		}
	}
	for _, p := range ports {
		if p.User {
			if err := d.portIntent(ctx, h, s, fsm.PortStepUnbind, "", p.ID); err != nil {
				return err
			}
			if _, err := d.nt.UnbindPort(ctx, p.ID); err != nil && !errors.Is(err, neutron.ErrNotFound) {
				return err
			}
		} else {
			if err := d.portIntent(ctx, h, s, fsm.PortStepDelete, "", p.ID); err != nil {
				return err
			}
			if err := d.nt.DeletePort(ctx, p.ID); err != nil {
				return err
			}
		}
		if _, ok := rec.Port(p.ID); ok {
			if err := h.Commit(ctx, &fsm.ForgetServerPort{ID: s.ID, Host: s.Host, Epoch: s.Epoch, PortID: p.ID}); err != nil {
				return err
			}
		}
	}
	return nil
}

// vifsOf are the VIFs the driver attaches to and detaches from s's node:
// its recorded Neutron ports with Neutron, else corral's own ids.
func (d *Driver) vifsOf(h *compute.Handle, s fsm.Server) []string {
	if d.nt == nil {
		return s.VIFs()
	}
	var out []string
	for _, p := range h.Store().ServerNet(s.ID).Ports {
		out = append(out, p.ID)
	}
	return out
}

// userPorts are the ports the user passed in for s.
func userPorts(s fsm.Server) map[string]bool {
	out := map[string]bool{}
	for _, n := range s.Networks {
		if n.Port != "" {
			out[n.Port] = true
		}
	}
	return out
}

// rereadPort records the port again when Neutron shows it with another
// MAC than recorded: Ironic's VIF attach puts the NIC's MAC on it, which
// is the server's address on the network.
func (d *Driver) rereadPort(ctx context.Context, h *compute.Handle, s fsm.Server, id string) error {
	rec, ok := h.Store().ServerNet(s.ID).Port(id)
	if !ok {
		return nil
	}
	p, err := d.nt.Port(ctx, id)
	if err != nil {
		return err
	}
	if p.MACAddress == rec.MAC {
		return nil
	}
	return d.recordPort(ctx, h, s, p, rec.NetworkName, rec.User)
}
