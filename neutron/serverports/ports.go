// Package serverports is the Neutron port lifecycle of the servers a host
// owns, shared by every virt driver (bare metal and hypervisor hosts): it
// gives each requested network of a server a port (created, or the port
// the user passed in taken over), records it in the replicated state,
// binds it to the server's host (a bare-metal node, or a hypervisor), finds
// the ports of an earlier attempt by their device_id when it resumes, and
// releases them (corral's deleted, the user's given back). Every Neutron
// side effect is preceded by its intent (fsm.SetPortIntent) committed at
// the owner's epoch through compute.Handle, so a host that lost the server
// takes none.
//
// What is the backend's own stays with its driver: Ironic's VIF attach and
// detach are ironic/driver's, which passes the attach to Attach as its plug.
// It must never import api, cluster or ironic.
package serverports

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
)

// Neutron is what the lifecycle needs from Neutron; *neutron.Client
// implements it.
type Neutron interface {
	Network(ctx context.Context, id string) (neutron.Network, error)
	Port(ctx context.Context, id string) (neutron.Port, error)
	CreatePort(ctx context.Context, p neutron.PortCreate) (neutron.Port, error)
	Ports(ctx context.Context, f neutron.PortFilter) ([]neutron.Port, error)
	UpdatePort(ctx context.Context, id string, u neutron.PortUpdate) (neutron.Port, error)
	UnbindPort(ctx context.Context, id string) (neutron.Port, error)
	ResetMAC(ctx context.Context, id string) (neutron.Port, error)
	DeletePort(ctx context.Context, id string) error
	SecurityGroups(ctx context.Context, f neutron.SecurityGroupFilter) ([]neutron.SecurityGroup, error)
}

var _ Neutron = (*neutron.Client)(nil)

// DeviceOwner is the device_owner of the ports corral creates or takes
// over for a server: Nova's compute:<availability zone>.
const DeviceOwner = "compute:nova"

// Config configures a host's port lifecycle.
type Config struct {
	// VNICType is the binding:vnic_type of the host's ports:
	// neutron.VNICBaremetal (Ironic binds them) or neutron.VNICNormal (a
	// hypervisor's virtual NICs).
	VNICType string
	Logger   *slog.Logger
}

// Ports is one host's port lifecycle.
type Ports struct {
	nt   Neutron
	vnic string
	log  *slog.Logger

	mu     sync.Mutex
	leases map[string]leaseMark // server → this host's last create lease
	groups map[string]string    // security group id → name, as last read (secgroups.go)
	nets   map[string]netName   // network id → its name, as last read
}

// netName is a network's name as read at a time.
type netName struct {
	name string
	read time.Time
}

// networkNameFor is how long a network's name read from Neutron names the
// ports recorded on it (a rename shows in the ports recorded after it).
const networkNameFor = time.Minute

// maxNetworkNames bounds the network names a host remembers.
const maxNetworkNames = 1024

func (p *Ports) knownNetwork(id string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, ok := p.nets[id]
	if !ok || time.Since(n.read) > networkNameFor {
		return "", false
	}
	return n.name, true
}

func (p *Ports) rememberNetwork(id, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.nets) >= maxNetworkNames {
		clear(p.nets)
	}
	p.nets[id] = netName{name: name, read: time.Now()}
}

// New returns the port lifecycle of a host whose ports have cfg.VNICType.
func New(nt Neutron, cfg Config) (*Ports, error) {
	if nt == nil {
		return nil, errors.New("serverports: no Neutron")
	}
	switch cfg.VNICType {
	case neutron.VNICBaremetal, neutron.VNICNormal:
	default:
		return nil, fmt.Errorf("serverports: vnic type %q: want %s or %s", cfg.VNICType, neutron.VNICBaremetal, neutron.VNICNormal)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Ports{nt: nt, vnic: cfg.VNICType, log: cfg.Logger.With("component", "server-ports", "vnic_type", cfg.VNICType),
		leases: map[string]leaseMark{}, groups: map[string]string{}, nets: map[string]netName{}}, nil
}

// portCommands are the commands of the port steps: each is sent only
// once every live peer can apply it.
var portCommands = []fsm.CommandType{fsm.CmdSetPortIntent, fsm.CmdRecordServerPort, fsm.CmdForgetServerPort}

// Known returns an error wrapping compute.ErrIntent until every live peer
// can apply the port commands.
func (p *Ports) Known(h *compute.Handle, s fsm.Server) error {
	for _, t := range portCommands {
		if !h.Known(t) {
			return fmt.Errorf("%w: not every live peer knows %s yet; the Neutron ports of server %s wait until every peer is upgraded",
				compute.ErrIntent, t, s.ID)
		}
	}
	return nil
}

// Intent commits, at s's epoch, the intent of one Neutron or VIF side
// effect (step, one of fsm's PortStep constants); an error wraps
// compute.ErrIntent and the caller takes none.
func (p *Ports) Intent(ctx context.Context, h *compute.Handle, s fsm.Server, step, network, port string) error {
	err := h.Commit(ctx, &fsm.SetPortIntent{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Step: step, NetworkID: network, PortID: port})
	if err != nil {
		return fmt.Errorf("%w: port %s (network %q, port %q) of server %s at epoch %d: %w",
			compute.ErrIntent, step, network, port, s.ID, s.Epoch, err)
	}
	return nil
}

// record commits the port as one of s's, with its security groups once
// every live peer keeps them.
func (p *Ports) record(ctx context.Context, h *compute.Handle, s fsm.Server, port neutron.Port, netName string, user bool) error {
	sp := fsm.ServerPort{ID: port.ID, NetworkID: port.NetworkID, NetworkName: netName, MAC: port.MACAddress, User: user}
	if groupsKept(h) {
		refs, err := p.groupRefs(ctx, h, s, port.SecurityGroups)
		if err != nil {
			return err
		}
		sp.SecurityGroups, sp.GroupsKnown = refs, true
	}
	for _, ip := range port.FixedIPs {
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

// Recorded are the ids of s's recorded ports, in the order recorded.
func (p *Ports) Recorded(h *compute.Handle, s fsm.Server) []string {
	var out []string
	for _, port := range h.Store().ServerNet(s.ID).Ports {
		out = append(out, port.ID)
	}
	return out
}

// create creates s's port on the network of want, after its intent,
// sent within the intent's lease: a create is the one port step that is not
// idempotent, so whoever resumes after a pending create intent waits for
// the lease to end (AwaitSettled) and then finds the port by its device.
// The port is created without a host (the quick create); Attach binds it.
// It carries corral's mark (description neutron.CreatedByCorral) from its
// create on, so a port whose create's answer was lost is still known as
// corral's by the leader's reaper.
func (p *Ports) create(ctx context.Context, h *compute.Handle, s fsm.Server, want fsm.Network, groups []string) (neutron.Port, error) {
	lease := h.StartLease()
	p.markLease(s, lease)
	if err := p.Intent(ctx, h, s, fsm.PortStepCreate, want.UUID, ""); err != nil {
		return neutron.Port{}, err
	}
	if lease.Expired() {
		return neutron.Port{}, fmt.Errorf("%w: the intent to create a port of server %s took longer than its lease", compute.ErrIntent, s.ID)
	}
	// The lease bounds when the create is sent, not when Neutron answers:
	// one sent in time is carried out however long Neutron takes, so its
	// answer is waited for (up to the client's timeout) rather than given
	// up at the lease's end, which would only make the next attempt create
	// again.
	lctx := neutron.WithSendBy(ctx, lease.Deadline)
	pc := neutron.PortCreate{NetworkID: want.UUID, ProjectID: s.ProjectID,
		Description: neutron.CreatedByCorral, DeviceID: s.ID, DeviceOwner: DeviceOwner, VNICType: p.vnic, SecurityGroups: groups}
	if want.FixedIP != "" {
		pc.FixedIPs = []neutron.FixedIP{{IPAddress: want.FixedIP}}
	}
	port, err := p.nt.CreatePort(lctx, pc)
	switch t := neutron.ErrorType(err); {
	case err == nil:
		return port, nil
	case want.FixedIP != "" && t == "InvalidIpForNetwork":
		// Nova's _create_port_minimal: InvalidInput, which aborts the build.
		return port, compute.Permanent("Build of instance %s aborted: Invalid input received: Fixed IP %s is not a valid ip address for network %s.",
			s.ID, want.FixedIP, want.UUID)
	case want.FixedIP != "" && (t == "IpAddressAlreadyAllocated" || t == "IpAddressInUse"):
		// Nova's FixedIpAlreadyInUse: taken since the API checked it.
		return port, compute.Permanent("Fixed IP %s is already in use.", want.FixedIP)
	}
	return port, portError(err, "creating a port on network "+want.UUID)
}

// leaseMark is the lease of this host's last create intent for a server.
type leaseMark struct {
	epoch    uint64
	deadline time.Time
}

func (p *Ports) markLease(s fsm.Server, l compute.Lease) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.leases[s.ID] = leaseMark{epoch: s.Epoch, deadline: l.Deadline}
}

// ownLease is the deadline of this host's lease for the pending intent
// in, when this host proposed it at s's epoch (zero otherwise).
func (p *Ports) ownLease(s fsm.Server, in *fsm.PortIntent) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	mk, ok := p.leases[s.ID]
	if !ok || mk.epoch != s.Epoch || in.Host != s.Host || in.Epoch != s.Epoch {
		return time.Time{}
	}
	return mk.deadline
}

// Attach binds s's port id to host (binding:host_id, the lifecycle's vnic
// type) and runs plug (the backend's attach, e.g. Ironic's VIF attach;
// nil for none), both under the intent attach at s's epoch, then records
// the port again when its MAC changed (a VIF attach puts the NIC's MAC on
// it, which is the server's address).
//
// A bare-metal port is bound only once plugged: Ironic's VIF attach puts
// the NIC's MAC on the port, which Neutron refuses once a mechanism
// driver has bound it (networking-baremetal, PortBound), and a port with
// a host costs Neutron a binding attempt at every update. A VM's port is
// bound first, as Nova binds it before it plugs the VIF.
func (p *Ports) Attach(ctx context.Context, h *compute.Handle, s fsm.Server, id, host string, plug func(context.Context) error) error {
	if err := p.Intent(ctx, h, s, fsm.PortStepAttach, "", id); err != nil {
		return err
	}
	if plug == nil {
		plug = func(context.Context) error { return nil }
	}
	steps := []func(context.Context) error{func(ctx context.Context) error { return p.bind(ctx, id, host) }, plug}
	if p.bindsAfterPlug() {
		steps[0], steps[1] = steps[1], steps[0]
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return p.reread(ctx, h, s, id)
}

// bindsAfterPlug says whether a port gets its host only once plugged:
// bare-metal ports, whose MAC Ironic's VIF attach changes.
func (p *Ports) bindsAfterPlug() bool { return p.vnic == neutron.VNICBaremetal }

// bind gives port id host as its binding:host_id, with the lifecycle's
// vnic type (idempotent). A port whose binding to host Neutron has
// already tried is left as it is, bound or binding_failed: a binding no
// mechanism driver can make costs Neutron ten attempts, and a retry after
// an answer lost to a busy Neutron would ask for it again. A port with
// the host stored but no binding tried (vif_type unbound: Neutron failed
// half way, e.g. its database locked) is asked again.
func (p *Ports) bind(ctx context.Context, id, host string) error {
	if cur, err := p.nt.Port(ctx, id); err == nil && cur.HostID == host && cur.VNICType == p.vnic &&
		cur.VIFType != "" && cur.VIFType != neutron.VIFUnbound {
		return nil
	}
	if _, err := p.nt.UpdatePort(ctx, id, neutron.PortUpdate{HostID: &host, VNICType: p.vnic}); err != nil {
		return portError(err, "binding port "+id+" to host "+host)
	}
	return nil
}

// reread records the port again when Neutron shows it with another MAC
// than recorded.
func (p *Ports) reread(ctx context.Context, h *compute.Handle, s fsm.Server, id string) error {
	rec, ok := h.Store().ServerNet(s.ID).Port(id)
	if !ok {
		return nil
	}
	port, err := p.nt.Port(ctx, id)
	if err != nil {
		return err
	}
	if port.MACAddress == rec.MAC && (!groupsKept(h) || rec.GroupsKnown) {
		return nil
	}
	return p.record(ctx, h, s, port, rec.NetworkName, rec.User)
}

// portError ends the build for what Neutron will never accept (a network
// or port gone, a request refused), and is retried otherwise.
func portError(err error, what string) error {
	switch {
	case errors.Is(err, neutron.ErrNotFound), errors.Is(err, neutron.ErrInvalid), errors.Is(err, neutron.ErrConflict):
		return compute.Permanent("Neutron refused %s: %v", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Release deletes the ports corral created for s and gives back the
// user's, each after its intent, and forgets each once done: the recorded
// ports and every port Neutron lists with s as its device (an attempt
// that did not live to record it). The backend's own detach (Ironic's
// VIFs) comes first, by the driver. With a create intent pending it
// first waits until that create can no longer be sent, so a port made
// late is listed and deleted too.
func (p *Ports) Release(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	if err := p.Known(h, s); err != nil {
		return err
	}
	rec := h.Store().ServerNet(s.ID)
	if in := rec.Intent; in != nil && in.Step == fsm.PortStepCreate {
		if err := h.AwaitSettled(ctx, s, p.ownLease(s, in)); err != nil {
			return err
		}
	}
	listed, err := p.nt.Ports(ctx, neutron.PortFilter{DeviceID: s.ID})
	if err != nil {
		return err
	}
	ports := slices.Clone(rec.Ports)
	user := userPorts(s)
	for _, q := range listed {
		if _, ok := rec.Port(q.ID); !ok {
			// Created or taken over by an attempt that did not live to
			// record it: the user's is given back, never deleted.
			ports = append(ports, fsm.ServerPort{ID: q.ID, NetworkID: q.NetworkID, User: user[q.ID]})
		}
	}
	for _, q := range ports {
		_, recorded := rec.Port(q.ID)
		if err := p.release(ctx, h, s, q, recorded); err != nil {
			return err
		}
	}
	return nil
}

// ReleaseInterface takes port id off s once the backend detached it (an
// os-interface detach, or an attach that failed): deleted when corral
// created it, given back when the user's, after its intent, then
// forgotten.
func (p *Ports) ReleaseInterface(ctx context.Context, h *compute.Handle, s fsm.Server, id string) error {
	if err := p.Known(h, s); err != nil {
		return err
	}
	q, recorded := h.Store().ServerNet(s.ID).Port(id)
	if !recorded {
		q = fsm.ServerPort{ID: id, User: userPorts(s)[id]}
	}
	return p.release(ctx, h, s, q, recorded)
}

// release deletes port q or gives it back when the user's, after its
// intent, and forgets it when recorded.
func (p *Ports) release(ctx context.Context, h *compute.Handle, s fsm.Server, q fsm.ServerPort, recorded bool) error {
	if q.User {
		if err := p.Intent(ctx, h, s, fsm.PortStepUnbind, "", q.ID); err != nil {
			return err
		}
		if err := p.giveBack(ctx, q.ID); err != nil {
			return err
		}
	} else {
		if err := p.Intent(ctx, h, s, fsm.PortStepDelete, "", q.ID); err != nil {
			return err
		}
		if err := p.nt.DeletePort(ctx, q.ID); err != nil {
			return err
		}
	}
	if recorded {
		return h.Commit(ctx, &fsm.ForgetServerPort{ID: s.ID, Host: s.Host, Epoch: s.Epoch, PortID: q.ID})
	}
	return nil
}

// giveBack unbinds the user's port id (device, owner, host emptied,
// profile cleared) and, for a bare-metal port, then gives it a new MAC
// of Neutron's, as Ironic does when it unbinds a port: a VIF detached
// while its node was not active leaves the NIC's MAC on the port, and
// MACs are unique per network, so the next port on that network could
// not take the NIC's MAC (Neutron 409, Ironic 500 on the attach). Two
// requests, as Ironic sends them: Neutron changes a MAC only once the
// port is unbound. A port already gone is no error.
func (p *Ports) giveBack(ctx context.Context, id string) error {
	if _, err := p.nt.UnbindPort(ctx, id); err != nil {
		if errors.Is(err, neutron.ErrNotFound) {
			return nil
		}
		return err
	}
	if p.vnic != neutron.VNICBaremetal {
		return nil
	}
	if _, err := p.nt.ResetMAC(ctx, id); err != nil && !errors.Is(err, neutron.ErrNotFound) {
		return err
	}
	return nil
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
