package sim

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"
)

var nodeListDefaultFields = []string{"instance_uuid", "maintenance", "power_state", "provision_state", "uuid", "name"}

var knownProvisionStates = map[string]bool{
	"enroll": true, "verifying": true, "manageable": true, "inspecting": true, "inspect wait": true,
	"inspect failed": true, "cleaning": true, "clean wait": true, "clean failed": true, "available": true,
	"deploying": true, "wait call-back": true, "deploy failed": true, "active": true, "deleting": true,
	"error": true, "adopting": true, "adopt failed": true, "rescuing": true, "rescue wait": true,
	"rescue failed": true, "rescue": true, "unrescuing": true, "unrescue failed": true,
	"servicing": true, "service wait": true, "service failed": true,
}

// nodeDoc renders a node as Ironic does at the call's microversion. Caller holds s.mu.
func (c *call) nodeDoc(n *node) map[string]any {
	var allocUUID any
	if a := c.s.allocs.byID(n.allocationID); a != nil {
		allocUUID = a.uuid
	}
	var reservation any
	if n.locked > 0 {
		reservation = c.s.opts.ConductorName
	}
	d := map[string]any{
		"uuid": n.uuid, "created_at": isoTime(n.created), "updated_at": isoTime(n.updated),
		"automated_clean": nil, "bios_interface": "no-bios", "boot_interface": "fake", "boot_mode": nil,
		"clean_step": map[string]any{}, "conductor_group": "", "console_enabled": false,
		"console_interface": "no-console", "deploy_interface": "fake", "deploy_step": map[string]any{},
		"description": deref(n.description), "driver": n.driver, "driver_info": cloneMap(n.driverInfo),
		"driver_internal_info": cloneMap(n.driverInternalInfo), "extra": cloneMap(n.extra), "fault": nil,
		"inspection_finished_at": nil, "inspection_started_at": nil, "inspect_interface": "no-inspect",
		"instance_info": cloneMap(n.instanceInfo), "instance_uuid": deref(n.instanceUUID),
		"last_error": deref(n.lastError), "lessee": deref(n.lessee), "maintenance": n.maintenance,
		"maintenance_reason": deref(n.maintenanceReason), "management_interface": "fake", "name": nil,
		"network_data": map[string]any{}, "network_interface": n.networkIface(), "owner": deref(n.owner),
		"power_interface": "fake", "power_state": deref(n.powerState), "properties": cloneMap(n.properties),
		"protected": false, "protected_reason": nil, "provision_state": n.provisionState,
		"provision_updated_at": isoTime(n.provisionUpdated), "raid_config": map[string]any{},
		"raid_interface": "no-raid", "rescue_interface": "no-rescue", "reservation": reservation,
		"resource_class": deref(n.resourceClass), "retired": false, "retired_reason": nil, "secure_boot": nil,
		"shard": nil, "storage_interface": "noop", "target_power_state": deref(n.targetPowerState),
		"target_provision_state": deref(n.targetProvisionState), "target_raid_config": map[string]any{},
		"traits": stringsAny(n.traits), "vendor_interface": "no-vendor", "links": c.links("nodes", n.uuid),
		"conductor": c.s.opts.ConductorName, "allocation_uuid": allocUUID, "chassis_uuid": nil,
		"ports": c.links("nodes", n.uuid+"/ports"),
	}
	if n.name != "" {
		d["name"] = n.name
	}
	if n.automatedClean != nil {
		d["automated_clean"] = *n.automatedClean
	}
	if c.minor >= 14 {
		d["states"] = c.links("nodes", n.uuid+"/states")
	}
	if c.minor >= 24 {
		d["portgroups"] = c.links("nodes", n.uuid+"/portgroups")
	}
	if c.minor >= 32 {
		d["volume"] = c.links("nodes", n.uuid+"/volume")
	}
	for f, v := range nodeVersionedFields {
		if c.minor < v {
			delete(d, f)
		}
	}
	return d
}

// selectFields keeps the requested fields (and links) of a rendered resource.
func selectFields(d map[string]any, fields []string) map[string]any {
	if fields == nil {
		return d
	}
	out := map[string]any{"links": d["links"]}
	for _, f := range fields {
		if v, ok := d[f]; ok {
			out[f] = v
		}
	}
	return out
}

// checkNodeFields validates a fields= list: fields of newer versions are 406, unknown ones 400
// for one node and 500 for a list (as Ironic does).
func (c *call) checkNodeFields(fields []string, single bool) *apiError {
	for _, f := range fields {
		if v, ok := nodeVersionedFields[f]; ok && c.minor < v {
			return errf(http.StatusNotAcceptable, "Request not acceptable.")
		}
		if _, ok := nodeFieldNames[f]; !ok && single {
			return errf(http.StatusBadRequest, "Field "+f+" is not a valid field.")
		}
		// A list selects columns of the node table: allocation_uuid is not one (Ironic 21.4).
		if _, ok := nodeFieldNames[f]; !ok || (!single && f == "allocation_uuid") {
			return errf(http.StatusInternalServerError, fmt.Sprintf("type object 'Node' has no attribute '%s'", f))
		}
	}
	return nil
}

var nodeFieldNames = func() map[string]bool {
	n := newNode(1, "x", "x", "x")
	c := &call{s: &Server{allocs: newAllocStore()}, r: &http.Request{Host: "x"}, minor: latestMinor}
	out := map[string]bool{}
	for k := range c.nodeDoc(n) {
		out[k] = true
	}
	for _, k := range []string{"states", "portgroups", "volume"} {
		out[k] = true
	}
	// Ironic selects neither timestamp with ?fields= (provision_updated_at it does).
	delete(out, "created_at")
	delete(out, "updated_at")
	return out
}()

func (c *call) getNode(ident string) {
	fields, err := c.fieldsQuery()
	if err == nil {
		err = c.checkNodeFields(fields, true)
	}
	if err != nil {
		c.failErr(err)
		return
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	n, err := c.findNode(ident)
	if err != nil {
		c.failErr(err)
		return
	}
	c.json(http.StatusOK, selectFields(c.nodeDoc(n), fields))
}

func (c *call) listNodes(detailPath bool) {
	fields, err := c.fieldsQuery()
	if err != nil {
		c.failErr(err)
		return
	}
	if detailPath && fields != nil {
		c.fail(http.StatusBadRequest, "Unexpected arguments: fields")
		return
	}
	detail, err := c.boolQuery("detail")
	if err != nil {
		c.failErr(err)
		return
	}
	if detail != nil && c.minor < mvNodeListDetail {
		c.fail(http.StatusNotAcceptable, "Request not acceptable.")
		return
	}
	if detail != nil && *detail && fields != nil {
		c.fail(http.StatusBadRequest, "Can not specify ?detail=True and fields in the same request.")
		return
	}
	full := detailPath || (detail != nil && *detail)
	if !full && fields == nil {
		fields = nodeListDefaultFields
	} else if err := c.checkNodeFields(fields, false); err != nil {
		c.failErr(err)
		return
	}
	limit, err := c.limitQuery()
	if err != nil {
		c.failErr(err)
		return
	}
	associated, err := c.boolQuery("associated")
	if err != nil {
		c.failErr(err)
		return
	}
	maintenance, err := c.boolQuery("maintenance")
	if err != nil {
		c.failErr(err)
		return
	}
	provState, hasProvState := c.query("provision_state")
	if hasProvState && !knownProvisionStates[provState] {
		c.fail(http.StatusBadRequest, fmt.Sprintf("Provision state %q is not valid", provState))
		return
	}
	rc, hasRC := c.query("resource_class")
	if hasRC && c.minor < mvResourceClass {
		c.fail(http.StatusNotAcceptable, "Request not acceptable. The minimal required API version should be 1.21")
		return
	}
	inst, hasInst := c.query("instance_uuid")
	if hasInst && !isUUID(inst) {
		c.fail(http.StatusBadRequest, "Expected UUID for instance_uuid: "+inst)
		return
	}
	driver, hasDriver := c.query("driver")
	if hasDriver && c.minor < 16 {
		c.fail(http.StatusNotAcceptable, "Request not acceptable. The minimal required API version should be 1.16")
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

	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	var m *node
	if hasMarker {
		if m = c.s.nodes.byUUID[normUUID(marker)]; m == nil {
			c.failErr(nodeNotFound(marker))
			return
		}
	}
	order := c.s.nodes.sorted(sortKey, sortDir, c.s.opts.NullsLast)
	var mk sortValue
	if m != nil && sortKey != "id" {
		mk = nodeSortKeys[sortKey](m)
	}
	items := []any{}
	var last string
	for k := range order {
		n := k.n
		if m != nil && !afterMarker(k, m, mk, sortKey, sortDir) {
			continue
		}
		if associated != nil && (n.instanceUUID != nil) != *associated {
			continue
		}
		if maintenance != nil && n.maintenance != *maintenance {
			continue
		}
		if hasProvState && n.provisionState != provState {
			continue
		}
		if hasRC && deref(n.resourceClass) != rc {
			continue
		}
		if hasInst && (n.instanceUUID == nil || !strings.EqualFold(*n.instanceUUID, inst)) {
			continue
		}
		if hasDriver && n.driver != driver {
			continue
		}
		if len(items) == limit {
			break
		}
		items = append(items, selectFields(c.nodeDoc(n), fields))
		last = n.uuid
	}
	body := map[string]any{"nodes": items}
	if len(items) > 0 && len(items) == limit && !hasInst {
		args := "sort_key=" + sortKey + "&sort_dir=" + sortDir + "&"
		if associated != nil && *associated {
			args += "associated=True&"
		}
		if maintenance != nil && *maintenance {
			args += "maintenance=True&"
		}
		if detail != nil {
			args += "detail=" + pyBool(*detail) + "&"
		}
		if fields != nil {
			args += "fields=" + strings.Join(fields, ",") + "&"
		}
		url := "nodes"
		if detailPath {
			url = "nodes/detail"
		}
		body["next"] = fmt.Sprintf("%s/v1/%s?%slimit=%d&marker=%s", c.base(), url, args, limit, last)
	}
	c.json(http.StatusOK, body)
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

func (c *call) sortQuery() (string, string, *apiError) {
	key, dir := "id", "asc"
	if v, ok := c.query("sort_key"); ok {
		key = v
	}
	if v, ok := c.query("sort_dir"); ok {
		dir = v
	}
	if dir != "asc" && dir != "desc" {
		return "", "", errf(http.StatusBadRequest, "Invalid sort direction: "+dir+
			". Acceptable values are 'asc' or 'desc'")
	}
	if slices.Contains(nodeUnsortable, key) {
		return "", "", errf(http.StatusBadRequest, "The sort_key value "+key+" is an invalid field for sorting")
	}
	if v, ok := nodeVersionedFields[key]; ok && c.minor < v {
		return "", "", errf(http.StatusNotAcceptable, "Request not acceptable.")
	}
	if _, ok := nodeSortKeys[key]; !ok && key != "id" {
		return "", "", errf(http.StatusBadRequest, `The sort_key value "`+key+`" is an invalid field for sorting`)
	}
	return key, dir, nil
}

var nodeCreateFields = map[string]bool{
	"uuid": true, "name": true, "driver": true, "resource_class": true, "properties": true, "extra": true,
	"driver_info": true, "instance_info": true, "description": true, "owner": true, "lessee": true,
	"automated_clean": true, "chassis_uuid": true, "conductor_group": true, "protected": false,
	"bios_interface": true, "boot_interface": true, "console_interface": true, "deploy_interface": true,
	"inspect_interface": true, "management_interface": true, "network_interface": true,
	"power_interface": true, "raid_interface": true, "rescue_interface": true, "storage_interface": true,
	"vendor_interface": true, "network_data": true, "shard": true, "boot_mode": false,
}

func (c *call) createNode() {
	var body map[string]any
	if err := c.decode(&body); err != nil {
		c.failErr(err)
		return
	}
	if body == nil {
		c.fail(http.StatusBadRequest, "Schema error for node: None is not of type 'object'")
		return
	}
	for k := range body {
		if !nodeCreateFields[k] {
			c.fail(http.StatusBadRequest, fmt.Sprintf(
				"Schema error for node: Additional properties are not allowed ('%s' was unexpected)", k))
			return
		}
		if v, ok := nodeVersionedFields[k]; ok && c.minor < v {
			c.fail(http.StatusNotAcceptable, "Request not acceptable.")
			return
		}
	}
	driver, _ := body["driver"].(string)
	if driver == "" {
		c.fail(http.StatusBadRequest, "Schema error for node: 'driver' is a required property")
		return
	}
	if driver != "fake-hardware" {
		c.fail(http.StatusBadRequest, fmt.Sprintf("No valid host was found. Reason: No conductor service "+
			"registered which supports driver %s for conductor group \"\".", driver))
		return
	}
	netIface := ""
	if v, ok := body["network_interface"]; ok && v != nil {
		s, _ := v.(string)
		enabled := c.s.opts.NetworkInterfaces
		if len(enabled) == 0 {
			enabled = []string{"noop"}
		}
		if !slices.Contains(enabled, s) {
			quoted := make([]string, len(enabled))
			for i, e := range enabled {
				quoted[i] = "'" + e + "'"
			}
			c.fail(http.StatusBadRequest, fmt.Sprintf("Could not find the following interface in the "+
				"'ironic.hardware.interfaces.network' entrypoint: %s. Valid interfaces are [%s].", s, strings.Join(quoted, ", ")))
			return
		}
		if s != "noop" {
			netIface = s
		}
	}
	id := uuid.NewString()
	if v, ok := body["uuid"]; ok && v != nil {
		s, _ := v.(string)
		if !isUUID(s) {
			c.fail(http.StatusBadRequest, fmt.Sprintf("Expected UUID for uuid: %v", v))
			return
		}
		id = normUUID(s)
	}
	name, _ := body["name"].(string)
	if name != "" && !c.validNodeName(name) {
		c.fail(http.StatusBadRequest, fmt.Sprintf("Cannot create node with invalid name '%s'", name))
		return
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.s.nodes.byUUID[id] != nil {
		c.fail(http.StatusConflict, "A node with UUID "+id+" already exists.")
		return
	}
	if name != "" && c.s.nodes.byName[name] != nil {
		c.fail(http.StatusConflict, "A node with name "+name+" already exists.")
		return
	}
	n := newNode(c.s.newID(), id, name, driver)
	n.networkInterface = netIface
	if rc, ok := body["resource_class"].(string); ok && rc != "" {
		n.resourceClass = strp(rc)
	}
	for key, dst := range map[string]*map[string]any{"properties": &n.properties, "extra": &n.extra,
		"driver_info": &n.driverInfo, "instance_info": &n.instanceInfo} {
		if m, ok := body[key].(map[string]any); ok {
			*dst = normalizeJSON(m).(map[string]any)
		}
	}
	if s, ok := body["description"].(string); ok {
		n.description = strp(s)
	}
	if s, ok := body["owner"].(string); ok {
		n.owner = strp(s)
	}
	if s, ok := body["lessee"].(string); ok {
		n.lessee = strp(s)
	}
	if b, ok := body["automated_clean"].(bool); ok {
		n.automatedClean = &b
	}
	c.s.nodes.add(n)
	c.w.Header().Set("Location", c.base()+"/v1/nodes/"+n.uuid)
	c.json(http.StatusCreated, c.nodeDoc(n))
}

func (c *call) deleteNode(ident string) {
	n, err := c.lockNode(ident)
	if err != nil {
		c.failErr(err)
		return
	}
	defer c.s.mu.Unlock()
	if n.instanceUUID != nil {
		c.failErr(nodeAssociated(n.uuid, *n.instanceUUID))
		return
	}
	switch n.provisionState {
	case "manageable", "enroll", "adopt failed", "available":
	default:
		if !n.maintenance {
			c.fail(http.StatusConflict, fmt.Sprintf("Can not delete node %q while it is in provision state %q. "+
				"Valid provision states to perform deletion are: \"('manageable', 'enroll', 'adopt failed', "+
				"'available')\", or set the node into maintenance mode", n.uuid, n.provisionState))
			return
		}
	}
	if a := c.s.allocs.byID(n.allocationID); a != nil {
		c.s.allocs.remove(a)
	}
	for _, p := range slices.Clone(c.s.ports.order) {
		if p.nodeID == n.id {
			c.s.ports.remove(p)
		}
	}
	c.s.nodes.remove(n)
	c.noContent(http.StatusNoContent)
}

func (c *call) getNodeStates(ident string) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	n, err := c.findNode(ident)
	if err != nil {
		c.failErr(err)
		return
	}
	d := c.nodeDoc(n)
	out := map[string]any{}
	for _, k := range []string{"console_enabled", "last_error", "power_state", "provision_state",
		"target_power_state", "target_provision_state", "provision_updated_at", "raid_config",
		"target_raid_config", "boot_mode", "secure_boot"} {
		if v, ok := d[k]; ok {
			out[k] = v
		}
	}
	c.json(http.StatusOK, out)
}
