package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// patchOp is one RFC 6902 operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
	has   bool
}

func (c *call) decodePatch() ([]patchOp, *apiError) {
	var raw any
	if err := c.decode(&raw); err != nil {
		return nil, err
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, errf(http.StatusBadRequest, "Schema error for patch: "+pyRepr(raw)+" is not of type 'array'")
	}
	ops := make([]patchOp, 0, len(list))
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, errf(http.StatusBadRequest, "Schema error for patch: "+pyRepr(item)+" is not of type 'object'")
		}
		op, _ := m["op"].(string)
		path, _ := m["path"].(string)
		if op == "" || path == "" {
			return nil, errf(http.StatusBadRequest, "Schema error for patch: 'op' and 'path' are required properties")
		}
		switch op {
		case "add", "replace", "remove":
		default:
			return nil, errf(http.StatusBadRequest, fmt.Sprintf(
				"Schema error for patch: '%s' is not one of ['add', 'replace', 'remove']", op))
		}
		v, has := m["value"]
		if (op == "add" || op == "replace") && !has {
			return nil, errf(http.StatusBadRequest, "Schema error for patch: 'value' is a required property")
		}
		ops = append(ops, patchOp{Op: op, Path: path, Value: v, has: has})
	}
	return ops, nil
}

// applyPatch applies ops, one at a time, to doc (a JSON object).
func applyPatch(doc map[string]any, ops []patchOp) *apiError {
	for _, op := range ops {
		if reason := applyOp(doc, op); reason != "" {
			return errf(http.StatusBadRequest, fmt.Sprintf("Couldn't apply patch '%s'. Reason: %s", op.repr(), reason))
		}
	}
	return nil
}

func applyOp(doc map[string]any, op patchOp) string {
	parts := strings.Split(strings.TrimPrefix(op.Path, "/"), "/")
	for i := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(parts[i], "~1", "/"), "~0", "~")
	}
	var parent any = doc
	for _, p := range parts[:len(parts)-1] {
		switch t := parent.(type) {
		case map[string]any:
			next, ok := t[p]
			if !ok {
				return fmt.Sprintf("member '%s' not found in %s", p, pyRepr(t))
			}
			parent = next
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(t) {
				return fmt.Sprintf("can't access index %s", p)
			}
			parent = t[i]
		default:
			return fmt.Sprintf("member '%s' not found in %s", p, pyRepr(t))
		}
	}
	key := parts[len(parts)-1]
	switch t := parent.(type) {
	case map[string]any:
		_, exists := t[key]
		switch op.Op {
		case "add":
			t[key] = deepCopy(op.Value)
		case "replace":
			if !exists {
				return fmt.Sprintf("can't replace a non-existent object '%s'", key)
			}
			t[key] = deepCopy(op.Value)
		case "remove":
			if !exists {
				return fmt.Sprintf("can't remove a non-existent object '%s'", key)
			}
			delete(t, key)
		}
		return ""
	case []any:
		// Lists inside instance_info and friends are rare; replace the containing value is enough.
		return "list members cannot be patched"
	default:
		return fmt.Sprintf("member '%s' not found in %s", key, pyRepr(t))
	}
}

func (op patchOp) repr() string {
	s := "{'op': " + pyRepr(op.Op) + ", 'path': " + pyRepr(op.Path)
	if op.has {
		s += ", 'value': " + pyRepr(op.Value)
	}
	return s + "}"
}

// pyRepr renders a decoded JSON value like Python's repr().
func pyRepr(v any) string {
	switch t := v.(type) {
	case nil:
		return "None"
	case bool:
		return pyBool(t)
	case string:
		return "'" + strings.ReplaceAll(t, "'", `\'`) + "'"
	case json.Number:
		return t.String()
	case float64:
		return strconv.FormatFloat(t, 'g', -1, 64)
	case []any:
		parts := make([]string, len(t))
		for i, x := range t {
			parts[i] = pyRepr(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = pyRepr(k) + ": " + pyRepr(t[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	default:
		return fmt.Sprint(t)
	}
}

func normalizeJSON(v any) any { return deepCopy(v) }

var nodePatchable = []string{"automated_clean", "bios_interface", "boot_interface", "chassis_uuid",
	"conductor_group", "console_interface", "deploy_interface", "description", "driver", "driver_info",
	"extra", "inspect_interface", "instance_info", "instance_uuid", "lessee", "maintenance",
	"management_interface", "name", "network_data", "network_interface", "owner", "power_interface",
	"properties", "protected", "protected_reason", "raid_interface", "rescue_interface", "resource_class",
	"retired", "retired_reason", "shard", "storage_interface", "vendor_interface"}

// updateAllowedStates are the provision states in which a node's resource_class may change.
var updateAllowedStates = []string{"enroll", "inspecting", "inspect wait", "manageable", "available"}

// transitionalUpdateStates are the states in which a node with a target state may still be patched.
var transitionalUpdateStates = []string{"deploy failed", "inspecting", "inspect failed", "inspect wait",
	"clean failed", "error", "verifying", "adopt failed", "rescue failed", "unrescue failed"}

func (c *call) patchNode(ident string) {
	ops, err := c.decodePatch()
	if err != nil {
		c.failErr(err)
		return
	}
	for _, op := range ops {
		top := strings.Split(strings.TrimPrefix(op.Path, "/"), "/")[0]
		if !slices.Contains(nodePatchable, top) {
			c.fail(http.StatusBadRequest, "Cannot patch /"+top+". Only the following can be updated: "+
				strings.Join(nodePatchable, ", "))
			return
		}
	}
	// The API refuses updates during a state transition before it asks for the node lock.
	onlyRemoveInstance := len(ops) == 1 && ops[0].Op == "remove" && ops[0].Path == "/instance_uuid"
	inTransition := func(n *node) bool {
		return !(n.maintenance && onlyRemoveInstance) && n.targetProvisionState != nil &&
			!slices.Contains(transitionalUpdateStates, n.provisionState)
	}
	c.s.mu.Lock()
	n, err := c.findNode(ident)
	if err == nil && inTransition(n) {
		err = errf(http.StatusConflict, "Node "+ident+" can not be updated while a state transition is in progress.")
	}
	c.s.mu.Unlock()
	if err != nil {
		c.failErr(err)
		return
	}
	n, err = c.lockNode(ident)
	if err != nil {
		c.failErr(err)
		return
	}
	defer c.s.mu.Unlock()
	if inTransition(n) {
		c.fail(http.StatusConflict, "Node "+ident+" can not be updated while a state transition is in progress.")
		return
	}
	doc := map[string]any{
		"instance_uuid": deref(n.instanceUUID), "instance_info": cloneMap(n.instanceInfo),
		"extra": cloneMap(n.extra), "properties": cloneMap(n.properties), "driver_info": cloneMap(n.driverInfo),
		"maintenance": n.maintenance, "resource_class": deref(n.resourceClass), "description": deref(n.description),
		"owner": deref(n.owner), "lessee": deref(n.lessee), "driver": n.driver,
	}
	if n.name != "" {
		doc["name"] = n.name
	} else {
		doc["name"] = nil
	}
	if n.automatedClean != nil {
		doc["automated_clean"] = *n.automatedClean
	} else {
		doc["automated_clean"] = nil
	}
	if err := applyPatch(doc, ops); err != nil {
		c.failErr(err)
		return
	}
	if err := c.applyNodeDoc(n, doc); err != nil {
		c.failErr(err)
		return
	}
	n.updated = now()
	// The response is rendered while the update still holds the node lock.
	n.locked++
	c.json(http.StatusOK, c.nodeDoc(n))
	n.locked--
}

func optString(doc map[string]any, key string) (*string, bool) {
	v, ok := doc[key]
	if !ok || v == nil {
		return nil, true
	}
	s, ok := v.(string)
	if !ok {
		return nil, false
	}
	return &s, true
}

func optMap(doc map[string]any, key string) (map[string]any, bool) {
	v, ok := doc[key]
	if !ok || v == nil {
		return map[string]any{}, true
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// applyNodeDoc validates the patched document and writes it back. Caller holds s.mu.
func (c *call) applyNodeDoc(n *node, doc map[string]any) *apiError {
	inst, ok := optString(doc, "instance_uuid")
	if !ok || (inst != nil && !isUUID(*inst)) {
		return errf(http.StatusBadRequest, fmt.Sprintf("Expected UUID for instance_uuid: %v", doc["instance_uuid"]))
	}
	if inst != nil {
		inst = strp(normUUID(*inst))
	}
	name, ok := optString(doc, "name")
	if !ok || (name != nil && !c.validNodeName(*name)) {
		return errf(http.StatusBadRequest, fmt.Sprintf("Node %s: Cannot change name to invalid name '%v'",
			c.nodeIdent(n), doc["name"]))
	}
	rc, ok := optString(doc, "resource_class")
	if !ok {
		return errf(http.StatusBadRequest, "Invalid resource_class")
	}
	maint, ok := doc["maintenance"].(bool)
	if !ok {
		return errf(http.StatusBadRequest, fmt.Sprintf("Invalid maintenance value: %v", doc["maintenance"]))
	}
	maps := map[string]map[string]any{}
	for _, k := range []string{"instance_info", "extra", "properties", "driver_info"} {
		m, ok := optMap(doc, k)
		if !ok {
			return errf(http.StatusBadRequest, fmt.Sprintf("Invalid %s: %s", k, pyRepr(doc[k])))
		}
		maps[k] = m
	}
	if d, _ := doc["driver"].(string); d != n.driver {
		return errf(http.StatusBadRequest, "Changing the driver is not supported by this simulator")
	}
	changedInst := !eqStrPtr(inst, n.instanceUUID)
	if changedInst && inst != nil && n.instanceUUID != nil {
		return nodeAssociated(n.uuid, *n.instanceUUID)
	}
	if changedInst && inst != nil {
		if other := c.s.nodes.byInstance(*inst); other != nil && other != n {
			return errf(http.StatusConflict, fmt.Sprintf("Instance %s is already associated with a node, "+
				"it cannot be associated with this other node %s", *inst, n.uuid))
		}
	}
	if !eqStrPtr(rc, n.resourceClass) && n.resourceClass != nil && !slices.Contains(updateAllowedStates, n.provisionState) {
		return errf(http.StatusConflict, fmt.Sprintf("Node %s can not have resource_class updated unless it is "+
			"in one of allowed (%s) states.", n.uuid, strings.Join(updateAllowedStates, ", ")))
	}
	if name != nil && *name != n.name {
		if other := c.s.nodes.byName[*name]; other != nil && other != n {
			return errf(http.StatusConflict, "A node with name "+*name+" already exists.")
		}
	}
	if changedInst && inst == nil && n.allocationID != 0 {
		if !n.maintenance && !slices.Contains(updateAllowedStates, n.provisionState) {
			return errf(http.StatusConflict, fmt.Sprintf("Node %s with an allocation can not have instance_uuid "+
				"removed unless it is in one of allowed (%s) states or in maintenance mode.",
				n.uuid, strings.Join(updateAllowedStates, ", ")))
		}
		if a := c.s.allocs.byID(n.allocationID); a != nil {
			c.s.allocs.remove(a)
		}
		n.allocationID = 0
	}
	// All checks passed: write back.
	if name != nil && *name != n.name {
		if n.name != "" {
			delete(c.s.nodes.byName, n.name)
		}
		n.name = *name
		c.s.nodes.byName[n.name] = n
	} else if name == nil && n.name != "" {
		delete(c.s.nodes.byName, n.name)
		n.name = ""
	}
	n.instanceUUID = inst
	n.resourceClass = rc
	if maint != n.maintenance {
		n.maintenance = maint
		if !maint {
			n.maintenanceReason = nil
		}
	}
	n.instanceInfo, n.extra, n.properties, n.driverInfo =
		maps["instance_info"], maps["extra"], maps["properties"], maps["driver_info"]
	n.description, _ = optString(doc, "description")
	n.owner, _ = optString(doc, "owner")
	n.lessee, _ = optString(doc, "lessee")
	if b, ok := doc["automated_clean"].(bool); ok {
		n.automatedClean = &b
	} else {
		n.automatedClean = nil
	}
	return nil
}

// nodeIdent is the node's name if it has one, else its UUID.
func (c *call) nodeIdent(n *node) string {
	if n.name != "" {
		return n.name
	}
	return n.uuid
}

func eqStrPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return strings.EqualFold(*a, *b)
}
