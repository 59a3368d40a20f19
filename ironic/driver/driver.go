package driver

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/neutron/serverports"
)

// Ironic is what the driver needs from Ironic; *ironic.Client implements it.
type Ironic interface {
	SupportsAllocations() bool
	ListNodes(ctx context.Context) ([]ironic.Node, error)
	GetNode(ctx context.Context, id string) (ironic.Node, error)
	GetNodeDetail(ctx context.Context, id string) (ironic.Node, error)
	CreateAllocation(ctx context.Context, r ironic.AllocationRequest) (ironic.Allocation, error)
	WaitAllocation(ctx context.Context, id string) (ironic.Allocation, error)
	DeleteAllocation(ctx context.Context, id string) error
	ReserveNode(ctx context.Context, nodeID, instanceUUID string) error
	ReleaseNode(ctx context.Context, nodeID, instanceUUID string) error
	Deploy(ctx context.Context, nodeID string, spec ironic.DeploySpec) error
	Undeploy(ctx context.Context, nodeID string) error
	WaitProvisionState(ctx context.Context, nodeID, want string) (ironic.Node, error)
	ListNodesInState(ctx context.Context, state string) ([]ironic.Node, error)
	PageSize() int
	AttachVIF(ctx context.Context, nodeID, vifID string) error
	DetachVIF(ctx context.Context, nodeID, vifID string) error
	ListVIFs(ctx context.Context, nodeID string) ([]string, error)
	// Server actions (actions.go).
	SetPowerState(ctx context.Context, nodeID, target string) error
	WaitPowerState(ctx context.Context, nodeID, want string) (ironic.Node, error)
	Rebuild(ctx context.Context, nodeID string, spec ironic.DeploySpec) error
}

var (
	_ Ironic         = (*ironic.Client)(nil)
	_ compute.Runner = (*Driver)(nil)
)

// Reservation modes ([ironic] reservation).
const (
	ReserveAuto         = "auto"          // allocations when Ironic has them (>= 1.52), else instance_uuid
	ReserveAllocations  = "allocations"   // Ironic's allocation API
	ReserveInstanceUUID = "instance_uuid" // deprecated: PATCH the node's instance_uuid
)

// Config configures the Ironic virt driver.
type Config struct {
	Reservation   string        // auto, allocations or instance_uuid
	DeployTimeout time.Duration // default 30 min
	// Wait is how a deploy or undeploy in flight is waited for: WaitWatch
	// (default) or WaitPoll.
	Wait string
	// MinPoll and MaxPoll bound the watcher's interval between rounds
	// (defaults 250 ms and 30 s); within them it is a tenth of how long
	// deploys take.
	MinPoll, MaxPoll time.Duration
	Logger           *slog.Logger
	// Neutron, when set ([neutron] configured), gives every requested
	// network of a server a Neutron port (neutron/serverports, vnic type
	// baremetal) attached as a VIF of its node (ports.go); nil keeps
	// corral's own networks.
	Neutron serverports.Neutron
}

// Driver is the Ironic virt driver (a compute.Virt): it builds a server
// by reserving a matching node (an allocation named after the server, or
// the node's instance_uuid), committing the reservation, and deploying;
// it deletes by undeploying and releasing. Every step reads what Ironic
// already has, so a retry or a new owner resumes instead of redoing.
type Driver struct {
	cfg  Config
	ir   Ironic
	log  *slog.Logger
	mode string
	w    *watcher
	// ports is the servers' Neutron port lifecycle; nil without Neutron.
	ports *serverports.Ports
}

// New returns the Ironic virt driver.
func New(cfg Config, ir Ironic) (*Driver, error) {
	if cfg.DeployTimeout <= 0 {
		cfg.DeployTimeout = 30 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	switch cfg.Wait {
	case "":
		cfg.Wait = WaitWatch
	case WaitWatch, WaitPoll:
	default:
		return nil, fmt.Errorf("[ironic] deploy_wait %q is unknown: use watch or poll", cfg.Wait)
	}
	if cfg.MinPoll <= 0 {
		cfg.MinPoll = 250 * time.Millisecond
	}
	if cfg.MaxPoll <= 0 {
		cfg.MaxPoll = 30 * time.Second
	}
	if cfg.MaxPoll < cfg.MinPoll {
		cfg.MaxPoll = cfg.MinPoll
	}
	mode, err := resolveMode(cfg.Reservation, ir.SupportsAllocations())
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, ir: ir, log: cfg.Logger.With("component", "ironic-driver"), mode: mode}
	if cfg.Neutron != nil {
		if d.ports, err = serverports.New(cfg.Neutron, serverports.Config{VNICType: neutron.VNICBaremetal, Logger: cfg.Logger}); err != nil {
			return nil, err
		}
	}
	d.w = newWatcher(d)
	if mode == ReserveInstanceUUID {
		d.log.Warn("reserving Ironic nodes by instance_uuid is deprecated: use an Ironic with the allocation API (microversion 1.52+) and [ironic] reservation = auto",
			"configured", cfg.Reservation)
	}
	return d, nil
}

// Kind implements compute.Virt.
func (d *Driver) Kind() string { return fsm.KindIronic }

func resolveMode(want string, haveAllocations bool) (string, error) {
	switch want {
	case "", ReserveAuto:
		if haveAllocations {
			return ReserveAllocations, nil
		}
		return ReserveInstanceUUID, nil
	case ReserveAllocations:
		if !haveAllocations {
			return "", fmt.Errorf("%w: [ironic] reservation = allocations needs microversion 1.52: use auto or instance_uuid", ironic.ErrUnsupported)
		}
		return ReserveAllocations, nil
	case ReserveInstanceUUID:
		return ReserveInstanceUUID, nil
	}
	return "", fmt.Errorf("[ironic] reservation %q is unknown: use auto, allocations or instance_uuid", want)
}

// Mode returns the reservation mode in use.
func (d *Driver) Mode() string { return d.mode }
