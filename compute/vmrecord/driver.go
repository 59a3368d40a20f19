// Package vmrecord is the VM virt driver of hypervisor hosts: it keeps a
// record of each VM it is asked to run (spawn, actions, destroy) and runs
// none, as no hypervisor stands behind it yet. It lets corral schedule and
// account VMs beside bare metal, through the same fencing as every
// driver. Named for what it holds, not "fake" (production hosts run it)
// nor "null" (it drops nothing: its records are the VMs' state). It never
// imports api, cluster or ironic.
package vmrecord

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
)

// Record is one VM the driver holds.
type Record struct {
	ServerID  string
	Name      string
	VCPUs     int
	RAM       int
	Disk      int
	Networks  []string
	SpawnedAt time.Time
	// Off, Image and Actions follow server actions (actions.go).
	Off     bool
	Image   string
	Actions int
}

// Driver is the recording VM driver.
type Driver struct {
	mu  sync.Mutex
	vms map[string]Record
}

// New returns a driver that holds no VM.
func New() *Driver { return &Driver{vms: map[string]Record{}} }

// Kind implements compute.Virt.
func (d *Driver) Kind() string { return fsm.KindHypervisor }

// Build records a spawn (idempotent).
func (d *Driver) Build(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	if s.TaskState != fsm.TaskSpawning {
		if err := h.SetTask(ctx, s, "", fsm.TaskSpawning, nil); err != nil {
			return err
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.vms[s.ID]; !ok {
		var nets []string
		for _, n := range s.Networks {
			nets = append(nets, n.UUID)
		}
		d.vms[s.ID] = Record{ServerID: s.ID, Name: s.Name, VCPUs: s.Flavor.VCPUs, RAM: s.Flavor.RAM,
			Disk: s.Flavor.Disk, Networks: nets, SpawnedAt: time.Now()}
	}
	return nil
}

// Delete records a destroy (idempotent).
func (d *Driver) Delete(_ context.Context, _ *compute.Handle, s fsm.Server) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.vms[s.ID]; ok {
		delete(d.vms, s.ID)
	}
	return nil
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
