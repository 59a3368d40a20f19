package ironic

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/corral-dev/corral/fsm"
)

// Ironic is what the driver and the node sync need from Ironic; *Client
// implements it.
type Ironic interface {
	SupportsAllocations() bool
	ListNodes(ctx context.Context) ([]Node, error)
	GetNode(ctx context.Context, id string) (Node, error)
	CreateAllocation(ctx context.Context, r AllocationRequest) (Allocation, error)
	WaitAllocation(ctx context.Context, id string) (Allocation, error)
	DeleteAllocation(ctx context.Context, id string) error
	ReserveNode(ctx context.Context, nodeID, instanceUUID string) error
	ReleaseNode(ctx context.Context, nodeID, instanceUUID string) error
	Deploy(ctx context.Context, nodeID string, spec DeploySpec) error
	Undeploy(ctx context.Context, nodeID string) error
	WaitProvisionState(ctx context.Context, nodeID, want string) (Node, error)
	AttachVIF(ctx context.Context, nodeID, vifID string) error
	DetachVIF(ctx context.Context, nodeID, vifID string) error
}

// Cluster is what the node sync needs from the peer.
type Cluster interface {
	Name() string
	Store() *fsm.Store
	Propose(ctx context.Context, cmd fsm.Command) (uint64, error)
	IsLeader() bool
}

// Reservation modes ([ironic] reservation).
const (
	ReserveAuto         = "auto"          // allocations when Ironic has them (>= 1.52), else instance_uuid
	ReserveAllocations  = "allocations"   // Ironic's allocation API
	ReserveInstanceUUID = "instance_uuid" // deprecated: PATCH the node's instance_uuid
)

// DriverConfig configures the Ironic virt driver.
type DriverConfig struct {
	Reservation   string        // auto, allocations or instance_uuid
	DeployTimeout time.Duration // default 30 min
	Logger        *slog.Logger
}

// Driver is the Ironic virt driver (a compute.Virt): it builds a server
// by reserving a matching node (an allocation named after the server, or
// the node's instance_uuid), committing the reservation, and deploying;
// it deletes by undeploying and releasing. Every step reads what Ironic
// already has, so a retry or a new owner resumes instead of redoing.
type Driver struct {
	cfg  DriverConfig
	ir   Ironic
	log  *slog.Logger
	mode string
}

// NewDriver returns the Ironic virt driver.
func NewDriver(cfg DriverConfig, ir Ironic) (*Driver, error) {
	if cfg.DeployTimeout <= 0 {
		cfg.DeployTimeout = 30 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	mode, err := resolveMode(cfg.Reservation, ir.SupportsAllocations())
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, ir: ir, log: cfg.Logger.With("component", "ironic-driver"), mode: mode}
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
			return "", fmt.Errorf("%w: [ironic] reservation = allocations needs microversion 1.52: use auto or instance_uuid", ErrUnsupported)
		}
		return ReserveAllocations, nil
	case ReserveInstanceUUID:
		return ReserveInstanceUUID, nil
	}
	return "", fmt.Errorf("[ironic] reservation %q is unknown: use auto, allocations or instance_uuid", want)
}

// Mode returns the reservation mode in use.
func (d *Driver) Mode() string { return d.mode }
