// Package vmrecord is the VM virt driver of hypervisor hosts: it keeps a
// record of each VM it is asked to run (spawn, actions, destroy) and runs
// none, as no hypervisor stands behind it yet. It lets corral schedule and
// account VMs beside bare metal, through the same fencing as every
// driver. Named for what it holds, not "fake" (production hosts run it)
// nor "null" (it drops nothing: its records are the VMs' state). With
// Neutron (Config.Ports) each VM gets a port per requested network, of
// vnic type normal and bound to this host, through the port lifecycle
// every driver shares (neutron/serverports), which it reaches through
// the Ports interface. It never imports api, cluster, ironic or neutron.
package vmrecord

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
)

// Ports is what the driver needs of the Neutron port lifecycle
// (*serverports.Ports of vnic type normal implements it).
type Ports interface {
	// Ensure gives the server a port per requested network, recorded,
	// and returns their ids.
	Ensure(ctx context.Context, h *compute.Handle, s fsm.Server, host string) ([]string, error)
	// Attach binds a port to host, after its intent (plug nil: a VM has
	// no backend attach of its own).
	Attach(ctx context.Context, h *compute.Handle, s fsm.Server, id, host string, plug func(context.Context) error) error
	// Release deletes the ports corral created for the server and gives
	// back the user's.
	Release(ctx context.Context, h *compute.Handle, s fsm.Server) error
	// EnsureInterface gives the server the port of an os-interface
	// attach, recorded, and returns its id; ReleaseInterface takes one
	// port off it.
	EnsureInterface(ctx context.Context, h *compute.Handle, s fsm.Server, req fsm.InterfaceRequest, host string) (string, error)
	ReleaseInterface(ctx context.Context, h *compute.Handle, s fsm.Server, id string) error
	// ChangeSecurityGroups carries out the server's security group
	// request on its ports.
	ChangeSecurityGroups(ctx context.Context, h *compute.Handle, s fsm.Server, req fsm.SecurityGroupRequest) (compute.SecurityGroupOutcome, error)
}

// Config configures the driver.
type Config struct {
	// Ports, when set ([neutron]), gives every VM its Neutron ports;
	// nil: the VMs' networks are corral's own.
	Ports Ports
}

// Record is one VM the driver holds.
type Record struct {
	ServerID  string
	Name      string
	VCPUs     int
	RAM       int
	Disk      int
	Networks  []string
	Ports     []string // its Neutron ports, with Config.Ports
	SpawnedAt time.Time
	// Off, Image and Actions follow server actions (actions.go).
	Off     bool
	Image   string
	Actions int
}

// Driver is the recording VM driver.
type Driver struct {
	ports Ports // nil without Neutron
	mu    sync.Mutex
	vms   map[string]Record
}

var (
	_ compute.BuildFailer    = (*Driver)(nil)
	_ compute.InterfaceActor = (*Driver)(nil)
)

// New returns a driver that holds no VM.
func New(cfg Config) *Driver { return &Driver{ports: cfg.Ports, vms: map[string]Record{}} }

// Kind implements compute.Virt.
func (d *Driver) Kind() string { return fsm.KindHypervisor }

// Build records a spawn (idempotent), after giving the VM its ports.
func (d *Driver) Build(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	if s.TaskState != fsm.TaskSpawning {
		if err := h.SetTask(ctx, s, "", fsm.TaskSpawning, nil); err != nil {
			return err
		}
	}
	var ports []string
	if d.ports != nil {
		ids, err := d.ports.Ensure(ctx, h, s, h.Host())
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := d.ports.Attach(ctx, h, s, id, h.Host(), nil); err != nil {
				return err
			}
		}
		ports = ids
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.vms[s.ID]; !ok {
		var nets []string
		for _, n := range s.Networks {
			nets = append(nets, n.UUID)
		}
		d.vms[s.ID] = Record{ServerID: s.ID, Name: s.Name, VCPUs: s.Flavor.VCPUs, RAM: s.Flavor.RAM,
			Disk: s.Flavor.Disk, Networks: nets, Ports: ports, SpawnedAt: time.Now()}
	}
	return nil
}

// Delete records a destroy (idempotent), then releases the VM's ports.
func (d *Driver) Delete(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	if d.ports != nil {
		if err := d.ports.Release(ctx, h, s); err != nil {
			return err
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.vms[s.ID]; ok {
		delete(d.vms, s.ID)
	}
	return nil
}

// BuildFailed gives back the ports of a VM whose build ends in ERROR.
func (d *Driver) BuildFailed(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	if d.ports == nil {
		return nil
	}
	return d.ports.Release(ctx, h, s)
}

// VMs returns the VMs the driver holds, sorted by server id.
func (d *Driver) VMs() []Record {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Record, 0, len(d.vms))
	for _, r := range d.vms {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ServerID < out[j].ServerID })
	return out
}

// AttachInterface gives a VM the port of an os-interface attach, bound to
// this host, and records it with the VM.
func (d *Driver) AttachInterface(ctx context.Context, h *compute.Handle, s fsm.Server, req fsm.InterfaceRequest) (string, error) {
	if d.ports == nil {
		return "", compute.Permanent("Failed to attach network adapter device to %s: corral has no [neutron]", s.ID)
	}
	id, err := d.ports.EnsureInterface(ctx, h, s, req, h.Host())
	if err != nil {
		return "", err
	}
	if err := d.ports.Attach(ctx, h, s, id, h.Host(), nil); err != nil {
		return "", err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if r, ok := d.vms[s.ID]; ok && !slices.Contains(r.Ports, id) {
		r.Ports = append(slices.Clone(r.Ports), id)
		d.vms[s.ID] = r
	}
	return id, nil
}

// DetachInterface releases one port of a VM.
func (d *Driver) DetachInterface(ctx context.Context, h *compute.Handle, s fsm.Server, req fsm.InterfaceRequest) error {
	if d.ports == nil {
		return compute.Permanent("Failed to detach network adapter device from %s: corral has no [neutron]", s.ID)
	}
	if err := d.ports.ReleaseInterface(ctx, h, s, req.PortID); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if r, ok := d.vms[s.ID]; ok {
		r.Ports = slices.DeleteFunc(slices.Clone(r.Ports), func(p string) bool { return p == req.PortID })
		d.vms[s.ID] = r
	}
	return nil
}

var _ compute.SecurityGroupActor = (*Driver)(nil)

// ChangeSecurityGroups changes the security groups of a VM's ports.
func (d *Driver) ChangeSecurityGroups(ctx context.Context, h *compute.Handle, s fsm.Server, req fsm.SecurityGroupRequest) (compute.SecurityGroupOutcome, error) {
	if d.ports == nil {
		return compute.SecurityGroupOutcome{Code: 400, Fault: "Network driver does not support this function."}, nil
	}
	return d.ports.ChangeSecurityGroups(ctx, h, s, req)
}
