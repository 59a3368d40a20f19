package sim

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

const (
	allocAttempts   = 3                      // like [conductor] node_locked_retry_attempts
	allocRetryDelay = 200 * time.Millisecond // Ironic waits 1s; locks here are shorter
)

// scheduleAllocation processes a in the background, like Ironic's conductor thread.
func (s *Server) scheduleAllocation(a *allocation, delay time.Duration, attempt int) {
	s.after(delay, func() { s.processAllocation(a, attempt) })
}

func (s *Server) failAllocation(a *allocation, reason string) {
	a.state = "error"
	a.nodeID = 0
	a.lastError = strp(fmt.Sprintf("Failed to process allocation %s: %s.", a.uuid, reason))
	a.updated = now()
}

// processAllocation picks and reserves a node for a. Caller holds s.mu. Selection and
// reservation happen under one lock, so concurrent allocations never share a node.
func (s *Server) processAllocation(a *allocation, attempt int) {
	if s.allocs.byUUID[a.uuid] != a || a.state != "allocating" {
		return // deleted meanwhile
	}
	var nodes []*node
	for _, n := range s.nodes.order {
		if deref(n.resourceClass) != a.resourceClass || n.provisionState != "available" ||
			n.instanceUUID != nil || n.powerState == nil || n.maintenance {
			continue
		}
		if len(a.candidates) > 0 && !slices.Contains(a.candidates, n.uuid) {
			continue
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		if len(a.candidates) > 0 {
			s.failAllocation(a, "none of the requested nodes are available and match the resource class "+a.resourceClass)
		} else {
			s.failAllocation(a, "no available nodes match the resource class "+a.resourceClass)
		}
		return
	}
	if len(a.traits) > 0 {
		nodes = slices.DeleteFunc(nodes, func(n *node) bool { return !hasTraits(n, a.traits) })
		if len(nodes) == 0 {
			s.failAllocation(a, "no suitable nodes have the requested traits "+strings.Join(a.traits, ", "))
			return
		}
	}
	s.rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	if a.hasName {
		if i := slices.IndexFunc(nodes, func(n *node) bool { return n.name == a.name }); i > 0 {
			n := nodes[i]
			nodes = slices.Insert(slices.Delete(nodes, i, i+1), 0, n)
		}
	}
	var busy int
	for _, n := range nodes {
		if n.locked > 0 {
			busy++
			continue
		}
		if other := s.nodes.byInstance(a.uuid); other != nil {
			// Ironic's database refuses a second node with this instance_uuid; the error escapes
			// the allocation logic as an unexpected one.
			a.state, a.nodeID, a.updated = "error", 0, now()
			a.lastError = strp(fmt.Sprintf("Unexpected exception during allocation: Instance %s is already "+
				"associated with a node, it cannot be associated with this other node %s", a.uuid, n.uuid))
			return
		}
		s.reserve(a, n)
		return
	}
	if busy > 0 && attempt < allocAttempts {
		s.scheduleAllocation(a, allocRetryDelay, attempt+1)
		return
	}
	if busy > 0 {
		s.failAllocation(a, fmt.Sprintf("could not reserve any of %d suitable nodes", busy))
		return
	}
	s.failAllocation(a, "all nodes were filtered out during reservation")
}

// reserve binds a to n as Ironic does when an allocation succeeds.
func (s *Server) reserve(a *allocation, n *node) {
	a.nodeID = n.id
	a.state = "active"
	a.lastError = nil
	a.updated = now()
	n.allocationID = a.id
	n.instanceUUID = strp(a.uuid)
	n.instanceInfo["traits"] = stringsAny(a.traits)
	n.updated = a.updated
}

func hasTraits(n *node, want []string) bool {
	for _, t := range want {
		if !slices.Contains(n.traits, t) {
			return false
		}
	}
	return true
}

// backfill records an allocation for a node that was deployed without one (API 1.58+). It is
// synchronous; on failure the allocation stays behind in state error, as in Ironic.
func (s *Server) backfill(a *allocation, n *node) *apiError {
	var errs []string
	if n.provisionState != "active" {
		errs = append(errs, fmt.Sprintf(`Node must be in the "active" state, but the current state is "%s"`,
			n.provisionState))
	}
	if a.resourceClass != "" && deref(n.resourceClass) != a.resourceClass {
		errs = append(errs, fmt.Sprintf("Resource class %v does not match the requested resource class %s",
			pyNone(n.resourceClass), a.resourceClass))
	}
	if len(a.traits) > 0 && !hasTraits(n, a.traits) {
		errs = append(errs, fmt.Sprintf("List of traits %s does not match the requested traits %s",
			pyRepr(stringsAny(n.traits)), pyRepr(stringsAny(a.traits))))
	}
	if len(a.candidates) > 0 && !slices.Contains(a.candidates, n.uuid) {
		errs = append(errs, fmt.Sprintf("Candidate nodes must be empty or contain the target node, but got %s",
			pyRepr(stringsAny(a.candidates))))
	}
	if len(errs) > 0 {
		s.failAllocation(a, fmt.Sprintf("Cannot backfill an allocation for node %s: %s", n.uuid, strings.Join(errs, "; ")))
		return errf(http.StatusInternalServerError, *a.lastError)
	}
	if n.instanceUUID != nil && *n.instanceUUID != a.uuid {
		err := nodeAssociated(n.uuid, *n.instanceUUID)
		s.failAllocation(a, strings.TrimSuffix(err.msg, "."))
		return err
	}
	if n.allocationID != 0 {
		err := nodeAssociated(n.uuid, deref(n.instanceUUID).(string))
		s.failAllocation(a, strings.TrimSuffix(err.msg, "."))
		return err
	}
	s.reserve(a, n)
	return nil
}

func pyNone(p *string) string {
	if p == nil {
		return "None"
	}
	return *p
}

type allocRequest struct {
	uuid, name, node, resourceClass string
	hasName                         bool
	traits, candidates              []string
	extra                           map[string]any
	owner                           *string
}

// parseAllocation validates a POST body like Ironic's schema and API checks.
func (c *call) parseAllocation(body map[string]any) (*allocRequest, *apiError) {
	schemaErr := func(msg string) *apiError { return errf(http.StatusBadRequest, "Schema error for allocation: "+msg) }
	req := &allocRequest{extra: map[string]any{}}
	for k, v := range body {
		if !allocCreateFields[k] {
			return nil, schemaErr(fmt.Sprintf("Additional properties are not allowed ('%s' was unexpected)", k))
		}
		if v == nil {
			continue
		}
		switch k {
		case "candidate_nodes", "traits":
			list, ok := v.([]any)
			if !ok {
				return nil, schemaErr(fmt.Sprintf("%s is not of type 'array', 'null'", pyRepr(v)))
			}
			for _, x := range list {
				s, ok := x.(string)
				if !ok {
					return nil, schemaErr(fmt.Sprintf("%s is not of type 'string'", pyRepr(x)))
				}
				if k == "traits" {
					if !validTrait(s) {
						return nil, traitSchemaError("allocation", s)
					}
					req.traits = append(req.traits, s)
				} else {
					req.candidates = append(req.candidates, s)
				}
			}
		case "extra":
			m, ok := v.(map[string]any)
			if !ok {
				return nil, schemaErr(fmt.Sprintf("%s is not of type 'object', 'null'", pyRepr(v)))
			}
			req.extra = normalizeJSON(m).(map[string]any)
		default:
			s, ok := v.(string)
			if !ok {
				return nil, schemaErr(fmt.Sprintf("%s is not of type 'string', 'null'", pyRepr(v)))
			}
			switch k {
			case "uuid":
				req.uuid = s
			case "name":
				req.name, req.hasName = s, s != ""
			case "node":
				req.node = s
			case "resource_class":
				if len(s) > 80 {
					return nil, schemaErr(fmt.Sprintf("%s is too long", pyRepr(s)))
				}
				req.resourceClass = s
			case "owner":
				if c.minor < mvAllocOwner {
					return nil, errf(http.StatusNotAcceptable, "Request not acceptable.")
				}
				req.owner = strp(s)
			}
		}
	}
	if req.uuid != "" {
		if !isUUID(req.uuid) {
			return nil, errf(http.StatusBadRequest, "Expected UUID for uuid: "+req.uuid)
		}
		req.uuid = normUUID(req.uuid)
	}
	if req.hasName && !c.validLogicalName(req.name) {
		return nil, errf(http.StatusBadRequest, "Cannot create allocation with invalid name '"+req.name+"'")
	}
	if req.node != "" && c.minor < mvAllocBackfill {
		return nil, errf(http.StatusBadRequest, "Cannot set node when creating an allocation in this API version")
	}
	return req, nil
}

// resolveCandidates turns candidate node names and UUIDs into UUIDs, keeping their order.
func (c *call) resolveCandidates(idents []string) ([]string, *apiError) {
	if len(idents) == 0 {
		return nil, nil
	}
	var missing []string
	out := make([]string, 0, len(idents))
	for _, id := range idents {
		var n *node
		if isUUID(id) {
			n = c.s.nodes.byUUID[normUUID(id)]
		} else if c.validLogicalName(id) {
			n = c.s.nodes.byName[id]
		}
		if n == nil {
			if !slices.Contains(missing, id) {
				missing = append(missing, id)
			}
			continue
		}
		out = append(out, n.uuid)
	}
	if len(missing) > 0 {
		return nil, errf(http.StatusBadRequest, "Nodes cannot be found: "+strings.Join(missing, ", "))
	}
	return out, nil
}
