package fsm

import (
	"fmt"
	"maps"
	"unicode/utf8"

	"github.com/corral-dev/corral/fsm/placement"
	"github.com/corral-dev/corral/fsm/sched"
)

// AdoptServer commits an instance that is already deployed on an Ironic
// node (brought over from another deployment, such as Nova's baremetal
// driver) as a server ACTIVE on that node. The leader chooses the owner
// like for any new server (fewest servers among the up, undrained ironic
// hosts) before proposing; Apply only validates that decision. The server
// holds the node at once (reservation and the node's one unit of its
// custom class in Placement), so the scheduler never offers the node to
// another server.
//
// Applying an AdoptServer for a server that already holds NodeUUID
// changes nothing and returns that server: an interrupted migration can
// resend it.
type AdoptServer struct {
	Meta
	ID       string `json:"id"` // the instance's uuid: the server keeps it
	Name     string `json:"name"`
	Flavor   Flavor `json:"flavor"` // embedded in the server as the instance had it
	ImageRef string `json:"image_ref"`
	NodeUUID string `json:"node_uuid"`
	// AllocationUUID is the node's Ironic allocation (a backfilled
	// allocation takes the instance's uuid); empty: none.
	AllocationUUID string            `json:"allocation_uuid,omitempty"`
	ProjectID      string            `json:"project_id,omitempty"` // owner of the claim (default admin)
	UserID         string            `json:"user_id,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	// Host is the owner the leader chose; empty after prepare means that
	// no ironic host can take the server, and Apply refuses it.
	Host string `json:"host,omitempty"`
	// Avoid are hosts the leader must not choose (dead to gossip).
	Avoid []string `json:"avoid,omitempty"`
}

// Type implements Command.
func (*AdoptServer) Type() CommandType { return CmdAdoptServer }

// decided chooses the owner (leader only, before proposing).
func (c *AdoptServer) decided(st *state, avoid []string) (Command, []bool) {
	d := *c
	d.Avoid = avoiding(c.Avoid, avoid)
	d.Host = sched.ChooseHost(placementCandidates(st, KindIronic, d.Avoid...), d.ID)
	return &d, []bool{false}
}

func init() {
	register[AdoptServer](CmdAdoptServer, "AdoptServer", applyAdoptServer)
}

// ReasonAdopted is the owner reason of an adopted server.
const ReasonAdopted = "adopted with its deployed node (fewest servers)"

func applyAdoptServer(st *state, c *AdoptServer) (any, error) {
	if err := validateAdopt(c); err != nil {
		return nil, err
	}
	if s, ok := st.servers[c.ID]; ok {
		if s.Live() && s.NodeUUID == c.NodeUUID {
			return cloneServer(s), nil // already adopted: nothing to do
		}
		return nil, fmt.Errorf("%w: server %s already exists (status %s, node %q): it cannot be adopted onto node %s",
			ErrConflict, c.ID, s.Status, s.NodeUUID, c.NodeUUID)
	}
	n, ok := st.nodes[c.NodeUUID]
	if !ok || n.Missing {
		return nil, fmt.Errorf("%w: Ironic node %s is not in the node mirror: wait for the next node sync and retry", ErrNotFound, c.NodeUUID)
	}
	if other, taken := st.reservations[c.NodeUUID]; taken {
		return nil, fmt.Errorf("%w: node %s is already reserved for server %s", ErrConflict, c.NodeUUID, other)
	}
	if n.InstanceUUID != "" && n.InstanceUUID != c.ID {
		return nil, fmt.Errorf("%w: Ironic node %s holds instance %s, not %s", ErrConflict, c.NodeUUID, n.InstanceUUID, c.ID)
	}
	if n.AllocationUUID != "" && n.AllocationUUID != c.AllocationUUID {
		return nil, fmt.Errorf("%w: Ironic node %s holds allocation %s, not %q", ErrConflict, c.NodeUUID, n.AllocationUUID, c.AllocationUUID)
	}
	if c.Host == "" {
		return nil, fmt.Errorf("%w: no compute host of kind ironic is up to own server %s: check `corral host list` and retry",
			ErrConflict, c.ID)
	}
	h, ok := st.hosts[c.Host]
	switch {
	case !ok || h.Status != HostUp:
		return nil, fmt.Errorf("%w: host %s chosen for server %s is no longer up; retry the request", ErrStaleDecision, c.Host, c.ID)
	case h.Drained:
		return nil, fmt.Errorf("%w: host %s chosen for server %s is drained; retry the request", ErrStaleDecision, c.Host, c.ID)
	case h.Kind != KindIronic:
		return nil, fmt.Errorf("%w: host %s is of kind %s and cannot own bare-metal server %s", ErrInvalid, c.Host, h.Kind, c.ID)
	}
	claimed, err := adoptClaim(st, c, n)
	if err != nil {
		return nil, err
	}
	at := c.At.UTC()
	s := Server{ID: c.ID, Name: c.Name, Status: StatusActive, Flavor: cloneFlavor(c.Flavor), ImageRef: c.ImageRef,
		Metadata: maps.Clone(c.Metadata), Host: c.Host, Epoch: 1, EpochIndex: st.index, OwnerReason: ReasonAdopted,
		OwnerSince: at, NodeUUID: c.NodeUUID, AllocationUUID: c.AllocationUUID, Claim: claimed, RequestID: c.RequestID,
		CreatedAt: at, UpdatedAt: at, ProjectID: c.ProjectID, UserID: c.UserID}
	if claimed != nil {
		s.ClaimedNode = c.NodeUUID
	}
	st.putServer(s)
	st.reservations[c.NodeUUID] = s.ID
	return cloneServer(s), nil
}

func validateAdopt(c *AdoptServer) error {
	switch {
	case c.ID == "" || len(c.ID) > MaxFlavorIDLen:
		return fmt.Errorf("%w: server id must be 1 to %d characters", ErrInvalid, MaxFlavorIDLen)
	case c.Name == "" || !c.Bounded && len(c.Name) > maxServerNameLen:
		return fmt.Errorf("%w: server name must be 1 to %d characters", ErrInvalid, maxServerNameLen)
	case c.NodeUUID == "":
		return fmt.Errorf("%w: an adopted server needs the Ironic node it is deployed on", ErrInvalid)
	case c.ImageRef == "":
		return fmt.Errorf("%w: an adopted server needs the image it was deployed from (image_ref)", ErrInvalid)
	case c.Flavor.ID == "" || c.Flavor.Name == "":
		return fmt.Errorf("%w: an adopted server needs its flavor (id and name)", ErrInvalid)
	}
	if err := checkServerText(c.Name, c.ImageRef, c.Metadata, nil, c.Bounded); err != nil {
		return err
	}
	if _, ok := placement.NormalizeUUID(c.ID); !ok {
		return fmt.Errorf("%w: server id %q is not a UUID: an adopted instance keeps its uuid", ErrInvalid, c.ID)
	}
	for _, v := range []struct{ field, value string }{{"project_id", c.ProjectID}, {"user_id", c.UserID}} {
		if len(v.value) > placement.MaxSymbolLen || !utf8.ValidString(v.value) {
			return fmt.Errorf("%w: %s must be at most %d bytes of UTF-8", ErrInvalid, v.field, placement.MaxSymbolLen)
		}
	}
	if err := validateExtraSpecs(c.Flavor.ExtraSpecs, c.Bounded); err != nil {
		return err
	}
	if c.Bounded {
		return checkFlavorText(c.Flavor)
	}
	return nil
}

// adoptClaim gives the server the node's one unit of its custom class. The
// node's provider reserves that unit while the node holds an instance and
// nothing claims it; the claim turns the reservation into an allocation.
// Every check comes before the first change, so a refusal changes nothing.
func adoptClaim(st *state, c *AdoptServer, n Node) (map[string]map[string]int64, error) {
	rc := NormalizeResourceClass(n.ResourceClass)
	if rc == "" {
		return nil, nil // a node without a class is never offered by the scheduler
	}
	p, err := st.placement.Provider(c.NodeUUID)
	if err != nil {
		return nil, fmt.Errorf("%w: node %s has no resource provider yet: wait for the next node sync and retry", ErrNotFound, c.NodeUUID)
	}
	usage, _ := st.placement.Usages(c.NodeUUID)
	for _, rcName := range sortedKeys(usage) {
		if usage[rcName] > 0 {
			return nil, fmt.Errorf("%w: node %s is claimed by another server (%d %s in use)", ErrConflict, c.NodeUUID, usage[rcName], rcName)
		}
	}
	if _, has := st.placement.Allocations(c.ID); has {
		return nil, fmt.Errorf("%w: consumer %s already holds allocations", ErrConflict, c.ID)
	}
	project, user := c.ProjectID, c.UserID
	if project == "" {
		project = "admin"
	}
	if user == "" {
		user = "admin"
	}
	inv := nodeInventory(n, st.legacyInventory, true)
	old := p.Inventories
	if !maps.Equal(old, inv) {
		if p, err = st.placement.SetInventories(c.NodeUUID, p.Generation, inv); err != nil {
			return nil, placementErr(err)
		}
	}
	allocs := map[string]map[string]int64{c.NodeUUID: {rc: 1}}
	err = st.placement.SetAllocations(c.ID, placement.ConsumerAllocations{ProjectID: project, UserID: user, Allocations: allocs})
	if err != nil {
		// Unreachable after the checks above; put the inventory back so
		// the node stays as it was.
		if !maps.Equal(old, inv) {
			_, _ = st.placement.SetInventories(c.NodeUUID, p.Generation, old)
		}
		return nil, placementErr(err)
	}
	return allocs, nil
}
