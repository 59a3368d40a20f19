package sim

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

const allocsNotAllowed = "The API version does not allow allocations"

var allocCreateFields = map[string]bool{
	"candidate_nodes": true, "extra": true, "name": true, "node": true, "owner": true,
	"resource_class": true, "traits": true, "uuid": true,
}

func (c *call) allocDoc(a *allocation) map[string]any {
	var nodeUUID any
	if n := c.s.nodes.byID(a.nodeID); n != nil {
		nodeUUID = n.uuid
	}
	var name any
	if a.hasName {
		name = a.name
	}
	d := map[string]any{
		"uuid": a.uuid, "created_at": isoTime(a.created), "updated_at": isoTime(a.updated),
		"candidate_nodes": stringsAny(a.candidates), "extra": cloneMap(a.extra), "last_error": deref(a.lastError),
		"name": name, "owner": deref(a.owner), "resource_class": a.resourceClass, "state": a.state,
		"traits": stringsAny(a.traits), "links": c.links("allocations", a.uuid), "node_uuid": nodeUUID,
	}
	if c.minor < mvAllocOwner {
		delete(d, "owner")
	}
	return d
}

func (c *call) routeAllocations(seg []string) {
	m := c.r.Method
	if c.minor < mvAllocations {
		if m == http.MethodGet {
			c.abort(http.StatusNotFound, allocsNotAllowed)
		} else {
			c.abort(http.StatusMethodNotAllowed, allocsNotAllowed)
		}
		return
	}
	c.setVersionHeaders(true)
	switch {
	case len(seg) == 0 && m == http.MethodGet:
		c.listAllocations()
	case len(seg) == 0 && m == http.MethodPost:
		c.createAllocation()
	case len(seg) == 1 && m == http.MethodGet:
		c.getAllocation(seg[0])
	case len(seg) == 1 && m == http.MethodDelete:
		c.deleteAllocation(func() (*allocation, *apiError) { return c.findAllocation(seg[0]) })
	case len(seg) == 1 && m == http.MethodPatch && c.minor < mvAllocPatch:
		c.fail(http.StatusMethodNotAllowed, "The API version does not allow updating allocations")
	case len(seg) == 1 && m == http.MethodPatch:
		c.patchAllocation(seg[0])
	case len(seg) == 1:
		c.methodNotAllowed()
	default:
		c.notFound()
	}
}

func (c *call) routeNodeAllocation(ident string) {
	if c.minor < mvAllocations {
		c.abortBare(http.StatusNotFound, "")
		return
	}
	find := func() (*allocation, *apiError) {
		n, err := c.findNode(ident)
		if err != nil {
			return nil, err
		}
		if a := c.s.allocs.byID(n.allocationID); a != nil {
			return a, nil
		}
		return nil, errf(http.StatusNotFound, "Allocation for node "+ident+" was not found")
	}
	switch c.r.Method {
	case http.MethodGet:
		fields, err := c.fieldsQuery()
		if err != nil {
			c.failErr(err)
			return
		}
		c.s.mu.Lock()
		defer c.s.mu.Unlock()
		a, err := find()
		if err != nil {
			c.failErr(err)
			return
		}
		c.json(http.StatusOK, selectFields(c.allocDoc(a), fields))
	case http.MethodDelete:
		c.deleteAllocation(find)
	default:
		c.methodNotAllowed()
	}
}

// findAllocation resolves an allocation by UUID or name. Caller holds s.mu.
func (c *call) findAllocation(ident string) (*allocation, *apiError) {
	var a *allocation
	if isUUID(ident) {
		a = c.s.allocs.byUUID[normUUID(ident)]
	} else {
		a = c.s.allocs.byName[ident]
	}
	if a == nil {
		return nil, errf(http.StatusNotFound, "Allocation "+ident+" could not be found.")
	}
	return a, nil
}

func (c *call) getAllocation(ident string) {
	fields, err := c.fieldsQuery()
	if err != nil {
		c.failErr(err)
		return
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	a, err := c.findAllocation(ident)
	if err != nil {
		c.failErr(err)
		return
	}
	c.json(http.StatusOK, selectFields(c.allocDoc(a), fields))
}

func (c *call) listAllocations() {
	fields, err := c.fieldsQuery()
	if err != nil {
		c.failErr(err)
		return
	}
	limit, err := c.limitQuery()
	if err != nil {
		c.failErr(err)
		return
	}
	sortKey, sortDir, err := c.sortQuery()
	if err != nil {
		c.failErr(err)
		return
	}
	marker, hasMarker := c.query("marker")
	if hasMarker && !isUUID(marker) {
		c.fail(http.StatusBadRequest, "Expected UUID for marker: "+marker)
		return
	}
	nodeIdent, hasNode := c.query("node")
	rc, hasRC := c.query("resource_class")
	state, hasState := c.query("state")
	owner, hasOwner := c.query("owner")

	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	var nodeID int64
	if hasNode {
		n, err := c.findNode(nodeIdent)
		if err != nil {
			err.status = http.StatusBadRequest
			c.failErr(err)
			return
		}
		nodeID = n.id
	}
	order := c.s.allocs.order
	if sortDir == "desc" {
		order = slices.Clone(order)
		slices.Reverse(order)
	}
	var markerID int64
	if hasMarker {
		a := c.s.allocs.byUUID[normUUID(marker)]
		if a == nil {
			c.fail(http.StatusNotFound, "Allocation "+marker+" could not be found.")
			return
		}
		markerID = a.id
	}
	items := []any{}
	var last string
	for _, a := range order {
		if hasMarker && ((sortDir == "asc" && a.id <= markerID) || (sortDir == "desc" && a.id >= markerID)) {
			continue
		}
		if (hasNode && a.nodeID != nodeID) || (hasRC && a.resourceClass != rc) || (hasState && a.state != state) ||
			(hasOwner && deref(a.owner) != owner) {
			continue
		}
		if len(items) == limit {
			break
		}
		items = append(items, selectFields(c.allocDoc(a), fields))
		last = a.uuid
	}
	body := map[string]any{"allocations": items}
	if len(items) > 0 && len(items) == limit {
		args := "sort_key=" + sortKey + "&sort_dir=" + sortDir + "&"
		if fields != nil {
			args += "fields=" + strings.Join(fields, ",") + "&"
		}
		body["next"] = fmt.Sprintf("%s/v1/allocations?%slimit=%d&marker=%s", c.base(), args, limit, last)
	}
	c.json(http.StatusOK, body)
}

func (c *call) createAllocation() {
	var body map[string]any
	if err := c.decode(&body); err != nil {
		c.failErr(err)
		return
	}
	req, err := c.parseAllocation(body)
	if err != nil {
		c.failErr(err)
		return
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	var backfill *node
	if req.node != "" {
		if backfill, err = c.findNode(req.node); err != nil {
			err.status = http.StatusBadRequest
			c.failErr(err)
			return
		}
	}
	if req.resourceClass == "" {
		if backfill == nil {
			c.fail(http.StatusBadRequest, "The resource_class field is mandatory when not backfilling")
			return
		}
		if backfill.resourceClass != nil {
			req.resourceClass = *backfill.resourceClass
		}
	}
	if req.candidates, err = c.resolveCandidates(req.candidates); err != nil {
		c.failErr(err)
		return
	}
	if req.uuid == "" {
		if backfill != nil && backfill.instanceUUID != nil {
			req.uuid = *backfill.instanceUUID
		} else {
			req.uuid = uuid.NewString()
		}
	}
	if c.s.allocs.byUUID[req.uuid] != nil {
		c.fail(http.StatusConflict, "An allocation with UUID "+req.uuid+" already exists.")
		return
	}
	if req.hasName && c.s.allocs.byName[req.name] != nil {
		c.fail(http.StatusConflict, "An allocation with name "+req.name+" already exists.")
		return
	}
	a := &allocation{
		id: c.s.newID(), uuid: req.uuid, name: req.name, hasName: req.hasName, resourceClass: req.resourceClass,
		traits: req.traits, candidates: req.candidates, extra: req.extra, owner: req.owner,
		state: "allocating", created: now(),
	}
	if a.traits == nil {
		a.traits = []string{}
	}
	if a.candidates == nil {
		a.candidates = []string{}
	}
	c.s.allocs.add(a)
	if backfill != nil {
		if err := c.s.backfill(a, backfill); err != nil {
			c.failErr(err)
			return
		}
	} else {
		c.s.scheduleAllocation(a, c.s.opts.AllocationDelay, 1)
	}
	c.w.Header().Set("Location", c.base()+"/v1/allocations/"+a.uuid)
	c.json(http.StatusCreated, c.allocDoc(a))
}

func (c *call) deleteAllocation(find func() (*allocation, *apiError)) {
	deadline := time.Now().Add(c.s.opts.LockWait)
	for {
		c.s.mu.Lock()
		a, err := find()
		if err != nil {
			c.s.mu.Unlock()
			c.failErr(err)
			return
		}
		n := c.s.nodes.byID(a.nodeID)
		if n != nil && n.locked > 0 {
			c.s.mu.Unlock()
			if time.Now().After(deadline) {
				c.failErr(nodeLocked(n.uuid, c.s.opts.ConductorName))
				return
			}
			t := time.NewTimer(20 * time.Millisecond)
			select {
			case <-t.C:
			case <-c.r.Context().Done():
				t.Stop()
				return
			}
			continue
		}
		defer c.s.mu.Unlock()
		if n != nil && !n.maintenance {
			if n.targetProvisionState != nil && !slices.Contains(transitionalUpdateStates, n.provisionState) {
				c.fail(http.StatusConflict, fmt.Sprintf("Cannot remove allocation %s for node %s, because the node "+
					"is in state %s where updates are not allowed (and maintenance mode is off)",
					a.uuid, n.uuid, n.provisionState))
				return
			}
			if n.provisionState == "active" {
				c.fail(http.StatusConflict, fmt.Sprintf("Cannot remove allocation %s for node %s, because the node "+
					"is active (and maintenance mode is off)", a.uuid, n.uuid))
				return
			}
		}
		if n != nil {
			n.allocationID = 0
			n.instanceUUID = nil
			n.updated = now()
		}
		c.s.allocs.remove(a)
		c.noContent(http.StatusNoContent)
		return
	}
}

func (c *call) patchAllocation(ident string) {
	ops, err := c.decodePatch()
	if err != nil {
		c.failErr(err)
		return
	}
	for _, op := range ops {
		top := strings.Split(strings.TrimPrefix(op.Path, "/"), "/")[0]
		if top != "name" && top != "extra" {
			c.fail(http.StatusBadRequest, "Cannot patch /"+top+". Only the following can be updated: name, extra")
			return
		}
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	a, err := c.findAllocation(ident)
	if err != nil {
		c.failErr(err)
		return
	}
	doc := map[string]any{"name": nil, "extra": cloneMap(a.extra)}
	if a.hasName {
		doc["name"] = a.name
	}
	if err := applyPatch(doc, ops); err != nil {
		c.failErr(err)
		return
	}
	name, ok := optString(doc, "name")
	if !ok || (name != nil && !c.validLogicalName(*name)) {
		c.fail(http.StatusBadRequest, fmt.Sprintf("Cannot update allocation with invalid name '%v'", doc["name"]))
		return
	}
	extra, ok := optMap(doc, "extra")
	if !ok {
		c.fail(http.StatusBadRequest, "Invalid extra: "+pyRepr(doc["extra"]))
		return
	}
	if name != nil && (!a.hasName || *name != a.name) && c.s.allocs.byName[*name] != nil {
		c.fail(http.StatusConflict, "An allocation with name "+*name+" already exists.")
		return
	}
	if a.hasName {
		delete(c.s.allocs.byName, a.name)
	}
	a.name, a.hasName = "", false
	if name != nil {
		a.name, a.hasName = *name, true
		c.s.allocs.byName[a.name] = a
	}
	a.extra = extra
	a.updated = now()
	c.json(http.StatusOK, c.allocDoc(a))
}
