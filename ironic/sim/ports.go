package sim

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/google/uuid"
)

var portVersionedFields = map[string]int{
	"internal_info": mvPortInternal, "local_link_connection": mvPortLocalLink, "pxe_enabled": mvPortLocalLink,
	"portgroup_uuid": mvPortPortgroup, "physical_network": mvPhysicalNet, "is_smartnic": mvPortSmartNIC,
}

var portCreateFields = map[string]bool{
	"uuid": true, "address": true, "node_uuid": true, "extra": true, "local_link_connection": true,
	"pxe_enabled": true, "physical_network": true, "is_smartnic": true, "portgroup_uuid": true, "name": false,
}

func (c *call) portDoc(p *port) map[string]any {
	nodeUUID := ""
	if n := c.s.nodes.byID(p.nodeID); n != nil {
		nodeUUID = n.uuid
	}
	d := map[string]any{
		"uuid": p.uuid, "created_at": isoTime(p.created), "updated_at": isoTime(p.updated),
		"address": p.address, "extra": cloneMap(p.extra), "internal_info": cloneMap(p.internalInfo),
		"is_smartnic": p.isSmartNIC, "local_link_connection": cloneMap(p.localLinkConn),
		"physical_network": deref(p.physicalNetwork), "pxe_enabled": p.pxeEnabled, "node_uuid": nodeUUID,
		"links": c.links("ports", p.uuid), "portgroup_uuid": deref(p.portgroupUUID),
	}
	for f, v := range portVersionedFields {
		if c.minor < v {
			delete(d, f)
		}
	}
	return d
}

func (c *call) routePorts(seg []string) {
	m := c.r.Method
	switch {
	case len(seg) == 0 && m == http.MethodGet:
		c.listPorts(false)
	case len(seg) == 0 && m == http.MethodPost:
		c.createPort()
	case len(seg) == 1 && seg[0] == "detail" && m == http.MethodGet:
		c.listPorts(true)
	case len(seg) == 1 && (m == http.MethodGet || m == http.MethodDelete):
		c.s.mu.Lock()
		defer c.s.mu.Unlock()
		p := c.s.ports.byUUID[normUUID(seg[0])]
		if p == nil {
			c.fail(http.StatusNotFound, "Port "+seg[0]+" could not be found.")
			return
		}
		if m == http.MethodDelete {
			c.s.ports.remove(p)
			c.noContent(http.StatusNoContent)
			return
		}
		fields, err := c.fieldsQuery()
		if err != nil {
			c.failErr(err)
			return
		}
		c.json(http.StatusOK, selectFields(c.portDoc(p), fields))
	case len(seg) == 1:
		c.methodNotAllowed()
	default:
		c.notFound()
	}
}

func (c *call) createPort() {
	var body map[string]any
	if err := c.decode(&body); err != nil {
		c.failErr(err)
		return
	}
	for k := range body {
		if !portCreateFields[k] {
			c.fail(http.StatusBadRequest, fmt.Sprintf(
				"Schema error for port: Additional properties are not allowed ('%s' was unexpected)", k))
			return
		}
	}
	nodeUUID, _ := body["node_uuid"].(string)
	if nodeUUID == "" {
		c.fail(http.StatusBadRequest, "Schema error for port: 'node_uuid' is a required property")
		return
	}
	addr, _ := body["address"].(string)
	if addr == "" {
		c.fail(http.StatusBadRequest, "Schema error for port: 'address' is a required property")
		return
	}
	hw, perr := net.ParseMAC(addr)
	if perr != nil || len(hw) != 6 {
		c.fail(http.StatusBadRequest, "Expected valid MAC address for address: "+addr)
		return
	}
	addr = strings.ToLower(hw.String())
	id := uuid.NewString()
	if v, ok := body["uuid"].(string); ok {
		if !isUUID(v) {
			c.fail(http.StatusBadRequest, "Expected UUID for uuid: "+v)
			return
		}
		id = normUUID(v)
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if !isUUID(nodeUUID) || c.s.nodes.byUUID[normUUID(nodeUUID)] == nil {
		c.fail(http.StatusBadRequest, "Node "+nodeUUID+" could not be found.")
		return
	}
	n := c.s.nodes.byUUID[normUUID(nodeUUID)]
	if c.s.ports.byMAC[addr] != nil {
		c.fail(http.StatusConflict, "A port with MAC address "+addr+" already exists.")
		return
	}
	if c.s.ports.byUUID[id] != nil {
		c.fail(http.StatusConflict, "A port with UUID "+id+" already exists.")
		return
	}
	p := &port{id: c.s.newID(), uuid: id, address: addr, nodeID: n.id, pxeEnabled: true, created: now()}
	if b, ok := body["pxe_enabled"].(bool); ok {
		p.pxeEnabled = b
	}
	if b, ok := body["is_smartnic"].(bool); ok {
		p.isSmartNIC = b
	}
	if s, ok := body["physical_network"].(string); ok {
		p.physicalNetwork = strp(s)
	}
	if m, ok := body["local_link_connection"].(map[string]any); ok {
		p.localLinkConn = normalizeJSON(m).(map[string]any)
	}
	if m, ok := body["extra"].(map[string]any); ok {
		p.extra = normalizeJSON(m).(map[string]any)
	}
	c.s.ports.add(p)
	c.w.Header().Set("Location", c.base()+"/v1/ports/"+p.uuid)
	c.json(http.StatusCreated, c.portDoc(p))
}

func (c *call) listPorts(detailPath bool) {
	fields, err := c.fieldsQuery()
	if err != nil {
		c.failErr(err)
		return
	}
	detail, err := c.boolQuery("detail")
	if err != nil {
		c.failErr(err)
		return
	}
	if detailPath && fields != nil {
		c.fail(http.StatusBadRequest, "Unexpected arguments: fields")
		return
	}
	if detail != nil && *detail && fields != nil {
		c.fail(http.StatusBadRequest, "Can not specify ?detail=True and fields in the same request.")
		return
	}
	if !detailPath && (detail == nil || !*detail) && fields == nil {
		fields = []string{"uuid", "address"}
	}
	limit, err := c.limitQuery()
	if err != nil {
		c.failErr(err)
		return
	}
	marker, hasMarker := c.query("marker")
	if hasMarker && !isUUID(marker) {
		c.fail(http.StatusBadRequest, "Expected UUID for marker: "+marker)
		return
	}
	address, hasAddr := c.query("address")
	nodeIdent, hasNode := c.query("node")
	nodeUUID, hasNodeUUID := c.query("node_uuid")

	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	var nodeID int64 = -1
	switch {
	case hasNode:
		n, err := c.findNode(nodeIdent)
		if err != nil {
			c.failErr(err)
			return
		}
		nodeID = n.id
	case hasNodeUUID:
		n, err := c.findNode(nodeUUID)
		if err != nil {
			c.failErr(err)
			return
		}
		nodeID = n.id
	}
	var markerID int64
	if hasMarker {
		p := c.s.ports.byUUID[normUUID(marker)]
		if p == nil {
			c.fail(http.StatusNotFound, "Port "+marker+" could not be found.")
			return
		}
		markerID = p.id
	}
	items := []any{}
	var last string
	for _, p := range c.s.ports.order {
		if p.id <= markerID || (nodeID >= 0 && p.nodeID != nodeID) ||
			(hasAddr && !strings.EqualFold(p.address, address)) {
			continue
		}
		if len(items) == limit {
			break
		}
		items = append(items, selectFields(c.portDoc(p), fields))
		last = p.uuid
	}
	body := map[string]any{"ports": items}
	if len(items) > 0 && len(items) == limit {
		args := ""
		if detail != nil {
			args += "detail=" + pyBool(*detail) + "&"
		}
		if fields != nil {
			args += "fields=" + strings.Join(fields, ",") + "&"
		}
		url := "ports"
		if detailPath {
			url = "ports/detail"
		}
		body["next"] = fmt.Sprintf("%s/v1/%s?%slimit=%d&marker=%s", c.base(), url, args, limit, last)
	}
	c.json(http.StatusOK, body)
}
