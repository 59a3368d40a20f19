package novabm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/wire"
)

// Ironic is what the migration needs from Ironic; *ironic.Client has it.
type Ironic interface {
	GetNode(ctx context.Context, id string) (ironic.Node, error)
	CreateNode(ctx context.Context, spec ironic.NodeSpec) (ironic.Node, error)
	ListPorts(ctx context.Context, nodeID string) ([]ironic.Port, error)
	PortByAddress(ctx context.Context, mac string) (ironic.Port, error)
	CreatePort(ctx context.Context, spec ironic.PortSpec) (ironic.Port, error)
	SetProvisionState(ctx context.Context, nodeID, verb string) error
	WaitProvisionState(ctx context.Context, nodeID, want string) (ironic.Node, error)
	UpdateNode(ctx context.Context, id string, ops []ironic.PatchOp) error
	SetPowerState(ctx context.Context, nodeID, target string) error
	BackfillAllocation(ctx context.Context, nodeID, instanceUUID string) (ironic.Allocation, error)
}

var _ Ironic = (*ironic.Client)(nil)

// MirrorNode is corral's view of an Ironic node.
type MirrorNode struct {
	ProvisionState string
	InstanceUUID   string
	Missing        bool
}

// Corral is what the migration needs from the cluster.
type Corral interface {
	// Reservations maps every reserved node to its server.
	Reservations(ctx context.Context) (map[string]string, error)
	// MirroredNodes is the cluster's Ironic node mirror by uuid.
	MirroredNodes(ctx context.Context) (map[string]MirrorNode, error)
	// Adopt commits an adopted server; adopting it again is success.
	Adopt(ctx context.Context, r wire.AdoptServerRequest) error
}

// Row outcomes.
const (
	Created   = "migrated"  // this run wrote it
	Unchanged = "unchanged" // already migrated by an earlier run
	Failed    = "failed"    // an error stopped it (see Result.Err)
)

// Result is what happened to one planned node (and its instance).
type Result struct {
	BMID     int64
	NodeUUID string
	Instance string
	Outcome  string
	Actions  []string // what this run did, in order
	Err      error
}

// Migrator carries out a plan.
type Migrator struct {
	Ironic Ironic
	Corral Corral
	Log    *slog.Logger
	// MirrorTimeout bounds the wait for corral's node sync to see the
	// adopted nodes (default 2 min).
	MirrorTimeout time.Duration
	// StepTimeout bounds one provision state change (default 5 min).
	StepTimeout time.Duration
	// Progress, when set, is called after every node of each phase.
	Progress func(phase string, done, total int)
}

// Run migrates every planned node: first everything in Ironic, node by
// node, then the adopted servers in corral. Each step reads what exists
// first, so a run resumes where an interrupted one stopped. The results
// are in plan order.
func (m *Migrator) Run(ctx context.Context, p Plan) []Result {
	if m.Log == nil {
		m.Log = slog.Default()
	}
	if m.MirrorTimeout <= 0 {
		m.MirrorTimeout = 2 * time.Minute
	}
	if m.StepTimeout <= 0 {
		m.StepTimeout = 5 * time.Minute
	}
	res := make([]Result, len(p.Nodes))
	for i, np := range p.Nodes {
		r := Result{BMID: np.BMID, NodeUUID: np.UUID}
		if np.Instance != nil {
			r.Instance = np.Instance.UUID
		}
		if err := m.ironicNode(ctx, np, &r); err != nil {
			r.Err = err
		}
		res[i] = r
		if m.Progress != nil {
			m.Progress("ironic", i+1, len(p.Nodes))
		}
		if ctx.Err() != nil {
			for j := i + 1; j < len(p.Nodes); j++ {
				res[j] = Result{BMID: p.Nodes[j].BMID, NodeUUID: p.Nodes[j].UUID, Err: ctx.Err()}
			}
			break
		}
	}
	m.corralServers(ctx, p, res)
	for i := range res {
		switch {
		case res[i].Err != nil:
			res[i].Outcome = Failed
		case len(res[i].Actions) > 0:
			res[i].Outcome = Created
		default:
			res[i].Outcome = Unchanged
		}
	}
	return res
}

func (r *Result) did(format string, args ...any) {
	r.Actions = append(r.Actions, fmt.Sprintf(format, args...))
}

// ironicNode brings one node to its planned state in Ironic. Everything
// that could refuse the node is checked before the first write.
func (m *Migrator) ironicNode(ctx context.Context, np NodePlan, r *Result) error {
	n, err := m.Ironic.GetNode(ctx, np.UUID)
	exists := err == nil
	if err != nil && !errors.Is(err, ironic.ErrNotFound) {
		return err
	}
	want := ""
	if np.Instance != nil {
		want = np.Instance.UUID
	}
	if exists && n.InstanceUUID != "" && !strings.EqualFold(n.InstanceUUID, want) {
		return fmt.Errorf("Ironic node %s already holds instance %s: it is not the node this migration created", np.UUID, n.InstanceUUID)
	}
	var missing []PortPlan
	for _, pp := range np.Ports {
		port, err := m.Ironic.PortByAddress(ctx, pp.Address)
		switch {
		case errors.Is(err, ironic.ErrNotFound):
			missing = append(missing, pp)
		case err != nil:
			return err
		case !strings.EqualFold(port.NodeUUID, np.UUID):
			return fmt.Errorf("MAC %s is already a port of Ironic node %s: remove that port or the interface row", pp.Address, port.NodeUUID)
		}
	}
	if !exists {
		n, err = m.Ironic.CreateNode(ctx, ironic.NodeSpec{UUID: np.UUID, Driver: np.Driver, ResourceClass: np.ResourceClass,
			DriverInfo: np.DriverInfo, Properties: np.Properties, Extra: np.Extra})
		if err != nil {
			return fmt.Errorf("enroll node %s: %w", np.UUID, err)
		}
		r.did("enrolled node")
	}
	for _, pp := range missing {
		if _, err := m.Ironic.CreatePort(ctx, ironic.PortSpec{NodeUUID: np.UUID, Address: pp.Address, Extra: pp.Extra}); err != nil {
			return fmt.Errorf("port %s of node %s: %w", pp.Address, np.UUID, err)
		}
		r.did("port %s", pp.Address)
	}
	if np.Instance == nil {
		return m.makeAvailable(ctx, np, n, r)
	}
	return m.adopt(ctx, np, n, r)
}

// settle waits for a node in transition (no target state any more).
func (m *Migrator) settle(ctx context.Context, n ironic.Node, want string) (ironic.Node, error) {
	wctx, cancel := context.WithTimeout(ctx, m.StepTimeout)
	defer cancel()
	return m.Ironic.WaitProvisionState(wctx, n.UUID, want)
}

func (m *Migrator) verb(ctx context.Context, r *Result, n ironic.Node, verb, want string) (ironic.Node, error) {
	if err := m.Ironic.SetProvisionState(ctx, n.UUID, verb); err != nil {
		return n, fmt.Errorf("%s node %s: %w", verb, n.UUID, err)
	}
	r.did("%s", verb)
	n, err := m.settle(ctx, n, want)
	if err != nil {
		return n, fmt.Errorf("%s node %s: %w", verb, n.UUID, err)
	}
	return n, nil
}

// makeAvailable takes a free node from enroll to available, powered off
// when Ironic does not know its power state.
func (m *Migrator) makeAvailable(ctx context.Context, np NodePlan, n ironic.Node, r *Result) error {
	var err error
	for range 6 {
		switch n.ProvisionState {
		case "enroll":
			n, err = m.verb(ctx, r, n, ironic.VerbManage, "manageable")
		case "manageable":
			n, err = m.verb(ctx, r, n, ironic.VerbProvide, ironic.StateAvailable)
		case "verifying", "cleaning", "clean wait":
			n, err = m.Ironic.GetNode(ctx, n.UUID)
			if err == nil && n.TargetProvisionState != "" {
				n, err = m.settle(ctx, n, n.TargetProvisionState)
			}
		case ironic.StateAvailable:
			return m.powerKnown(ctx, n, r)
		default:
			return fmt.Errorf("free node %s is %q in Ironic, not available: check it with `openstack baremetal node show %s`",
				n.UUID, n.ProvisionState, n.UUID)
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("node %s did not become available (last %q)", n.UUID, n.ProvisionState)
}

// powerKnown makes sure Ironic knows the power state of a free node: the
// allocation engine skips nodes whose power state is unknown.
func (m *Migrator) powerKnown(ctx context.Context, n ironic.Node, r *Result) error {
	if n.PowerState != "" || n.TargetPowerState != "" {
		return nil
	}
	if err := m.Ironic.SetPowerState(ctx, n.UUID, "power off"); err != nil {
		return fmt.Errorf("power off free node %s: %w", n.UUID, err)
	}
	r.did("power off")
	deadline := time.Now().Add(m.StepTimeout)
	for time.Now().Before(deadline) {
		cur, err := m.Ironic.GetNode(ctx, n.UUID)
		if err != nil {
			return err
		}
		if cur.PowerState != "" && cur.TargetPowerState == "" {
			return nil
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("node %s: power state still unknown after power off", n.UUID)
}

// adopt takes a deployed node from enroll to active with its instance,
// then backfills its allocation.
func (m *Migrator) adopt(ctx context.Context, np NodePlan, n ironic.Node, r *Result) error {
	inst := np.Instance
	var err error
	for range 6 {
		switch n.ProvisionState {
		case "enroll":
			n, err = m.verb(ctx, r, n, ironic.VerbManage, "manageable")
		case "manageable":
			if err = m.instanceFields(ctx, np, n, r); err == nil {
				n, err = m.verb(ctx, r, n, ironic.VerbAdopt, ironic.StateActive)
			}
		case "verifying", "adopting":
			n, err = m.Ironic.GetNode(ctx, n.UUID)
			if err == nil && n.TargetProvisionState != "" {
				n, err = m.settle(ctx, n, n.TargetProvisionState)
			}
		case "adopt failed":
			return fmt.Errorf("Ironic could not adopt node %s: %s; fix the node's driver_info and run again", n.UUID, n.LastError)
		case ironic.StateActive:
			if !strings.EqualFold(n.InstanceUUID, inst.UUID) {
				return fmt.Errorf("Ironic node %s is active with instance %q, not %s", n.UUID, n.InstanceUUID, inst.UUID)
			}
			return m.backfill(ctx, n, inst, r)
		default:
			return fmt.Errorf("deployed node %s is %q in Ironic: only enroll, manageable or active can be adopted", n.UUID, n.ProvisionState)
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("node %s did not become active (last %q)", n.UUID, n.ProvisionState)
}

// instanceFields writes the node's instance_uuid and instance_info before
// adoption (both are read first: a rerun writes nothing twice).
func (m *Migrator) instanceFields(ctx context.Context, np NodePlan, n ironic.Node, r *Result) error {
	var ops []ironic.PatchOp
	if n.InstanceUUID == "" {
		ops = append(ops, ironic.PatchOp{Op: "add", Path: "/instance_uuid", Value: np.Instance.UUID})
	}
	for _, k := range sortedKeys(np.Instance.InstanceInfo) {
		v := np.Instance.InstanceInfo[k]
		if cur, ok := n.InstanceInfo[k]; ok && cur == fmt.Sprint(v) {
			continue
		}
		ops = append(ops, ironic.PatchOp{Op: "add", Path: "/instance_info/" + k, Value: v})
	}
	if len(ops) == 0 {
		return nil
	}
	if err := m.Ironic.UpdateNode(ctx, n.UUID, ops); err != nil {
		return fmt.Errorf("instance fields of node %s: %w", n.UUID, err)
	}
	r.did("instance_uuid and instance_info")
	return nil
}

func (m *Migrator) backfill(ctx context.Context, n ironic.Node, inst *InstancePlan, r *Result) error {
	if n.AllocationUUID != "" {
		if !strings.EqualFold(n.AllocationUUID, inst.UUID) {
			return fmt.Errorf("Ironic node %s holds allocation %s, not one for instance %s", n.UUID, n.AllocationUUID, inst.UUID)
		}
		return nil
	}
	a, err := m.Ironic.BackfillAllocation(ctx, n.UUID, inst.UUID)
	if err != nil {
		return fmt.Errorf("backfill the allocation of node %s: %w", n.UUID, err)
	}
	if !strings.EqualFold(a.UUID, inst.UUID) {
		return fmt.Errorf("the backfilled allocation of node %s is %s, not the instance's uuid %s", n.UUID, a.UUID, inst.UUID)
	}
	r.did("allocation")
	return nil
}

// corralServers commits the adopted servers whose Ironic part is done,
// once corral's node sync shows their nodes active with the instance.
func (m *Migrator) corralServers(ctx context.Context, p Plan, res []Result) {
	var todo []int
	for i, np := range p.Nodes {
		if np.Instance != nil && res[i].Err == nil {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return
	}
	failAll := func(err error) {
		for _, i := range todo {
			if res[i].Err == nil {
				res[i].Err = err
			}
		}
	}
	held, err := m.Corral.Reservations(ctx)
	if err != nil {
		failAll(fmt.Errorf("read corral's reservations: %w", err))
		return
	}
	var pending []int
	for _, i := range todo {
		np := p.Nodes[i]
		switch srv := held[np.UUID]; {
		case srv == "":
			pending = append(pending, i)
		case !strings.EqualFold(srv, np.Instance.UUID):
			res[i].Err = fmt.Errorf("corral already has node %s reserved for server %s", np.UUID, srv)
		}
	}
	if len(pending) == 0 {
		return
	}
	// Wait until the node sync has seen every pending node as Ironic has it.
	deadline := time.Now().Add(m.MirrorTimeout)
	var mirror map[string]MirrorNode
	for {
		mirror, err = m.Corral.MirroredNodes(ctx)
		ready := err == nil
		for _, i := range pending {
			mn, ok := mirror[p.Nodes[i].UUID]
			ready = ready && ok && !mn.Missing && mn.ProvisionState == ironic.StateActive &&
				strings.EqualFold(mn.InstanceUUID, p.Nodes[i].Instance.UUID)
		}
		if ready || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		_ = sleepCtx(ctx, 250*time.Millisecond)
	}
	for k, i := range pending {
		np := p.Nodes[i]
		mn, ok := mirror[np.UUID]
		if !ok || mn.ProvisionState != ironic.StateActive {
			res[i].Err = fmt.Errorf("corral's node sync has not seen node %s active within %s: is a corral host connected to this Ironic?", np.UUID, m.MirrorTimeout)
			continue
		}
		in := np.Instance
		err := m.Corral.Adopt(ctx, wire.AdoptServerRequest{ID: in.UUID, Name: in.Name, Flavor: in.Flavor, ImageRef: in.ImageRef,
			NodeUUID: np.UUID, AllocationUUID: in.UUID, ProjectID: in.ProjectID, UserID: in.UserID,
			Metadata: map[string]string{"migrated_from": "nova-baremetal", "nova_host": in.OldHost}})
		if err != nil {
			res[i].Err = fmt.Errorf("commit server %s in corral: %w", in.UUID, err)
		} else {
			res[i].did("corral server")
		}
		if m.Progress != nil {
			m.Progress("corral", k+1, len(pending))
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
