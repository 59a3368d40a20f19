package fsm

import (
	"fmt"
	"maps"

	"github.com/corral-dev/corral/fsm/placement"
)

// MigrateFlavors is the online Ironic flavor migration for one batch of
// servers: each server's EMBEDDED flavor gains resources:<ResourceClass>=1
// and zeroes VCPU, MEMORY_MB and DISK_GB, and its allocations become the
// one unit of the custom class on its node — all servers of the batch or
// none. Servers already migrated are left as they are.
type MigrateFlavors struct {
	Meta
	ResourceClass string   `json:"resource_class"`
	ServerIDs     []string `json:"server_ids"`
}

// Type implements Command.
func (*MigrateFlavors) Type() CommandType { return CmdMigrateFlavors }

func init() {
	register[MigrateFlavors](CmdMigrateFlavors, "MigrateFlavors", applyMigrateFlavors)
}

// migratedSpecs are the extra specs the migration sets.
func migratedSpecs(rc string) map[string]string {
	return map[string]string{"resources:" + rc: "1", "resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}
}

// Migrated reports whether a server's embedded flavor already asks for rc
// alone.
func (s Server) Migrated(rc string) bool {
	for k, v := range migratedSpecs(rc) {
		if s.Flavor.ExtraSpecs[k] != v {
			return false
		}
	}
	return true
}

// ServerNode is the Ironic node a server holds or claims.
func (s Server) ServerNode() string {
	if s.NodeUUID != "" {
		return s.NodeUUID
	}
	return s.ClaimedNode
}

func applyMigrateFlavors(st *state, c *MigrateFlavors) (any, error) {
	if NormalizeResourceClass(c.ResourceClass) != c.ResourceClass || c.ResourceClass == "" {
		return nil, fmt.Errorf("%w: resource class %q must be a custom class such as CUSTOM_BAREMETAL_GOLD", ErrInvalid, c.ResourceClass)
	}
	reqs := map[string]placement.ConsumerAllocations{}
	for _, id := range c.ServerIDs {
		s, ok := st.servers[id]
		if !ok || !s.Live() {
			return nil, errServerNotFound(id)
		}
		node := s.ServerNode()
		if node == "" {
			return nil, fmt.Errorf("%w: server %s holds no Ironic node: only bare-metal servers are migrated", ErrInvalid, id)
		}
		if s.Migrated(c.ResourceClass) {
			continue
		}
		req := placement.ConsumerAllocations{ProjectID: "admin", UserID: "admin",
			Allocations: map[string]map[string]int64{node: {c.ResourceClass: 1}}}
		if cur, ok := st.placement.Allocations(id); ok {
			req.ConsumerGeneration, req.ProjectID, req.UserID = cur.ConsumerGeneration, cur.ProjectID, cur.UserID
		}
		reqs[id] = req
	}
	if len(reqs) == 0 {
		return 0, nil
	}
	if err := st.placement.SetAllocationsMulti(reqs); err != nil {
		return nil, placementErr(err)
	}
	at := c.At.UTC()
	for _, id := range sortedKeys(reqs) {
		s := st.servers[id]
		// A copy: servers may share one map of extra specs (share.go).
		specs := maps.Clone(s.Flavor.ExtraSpecs)
		if specs == nil {
			specs = map[string]string{}
		}
		maps.Copy(specs, migratedSpecs(c.ResourceClass))
		s.Flavor.ExtraSpecs = specs
		s.Claim = cloneClaim(reqs[id].Allocations)
		s.UpdatedAt = at
		st.putServer(s)
	}
	// Inventory refused while these allocations held it may go now.
	for _, id := range sortedKeys(st.nodes) {
		if st.nodes[id].InventoryConflict != "" {
			reconcileNodeProvider(st, id, at)
		}
	}
	return len(reqs), nil
}
