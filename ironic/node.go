package ironic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
)

// Node is the part of an Ironic node that corral uses.
type Node struct {
	UUID, Name, ResourceClass                                          string
	ProvisionState, TargetProvisionState, PowerState, TargetPowerState string
	Maintenance                                                        bool
	// Properties are stringified: numbers in plain decimal, booleans "true"/"false", objects
	// and lists as JSON; null values are left out.
	Properties                   map[string]string
	Capabilities                 map[string]string // parsed from properties.capabilities "k:v,k2:v2"
	Traits                       []string          // sorted
	InstanceUUID, AllocationUUID string
	LastError                    string
	// InstanceInfo is instance_info, stringified like Properties (image_source, root_gb,
	// display_name, capabilities, traits, ...).
	InstanceInfo map[string]string
	// CreatedAt and UpdatedAt are Ironic's timestamps (its own clock). UpdatedAt is zero
	// while the node was never changed since it was created (Ironic's null). Listings and
	// GetNodeDetail read them; GetNode leaves them zero (?fields= cannot select them).
	// ProvisionUpdatedAt, read by GetNode and GetNodeDetail, is when the provision state
	// last changed.
	CreatedAt, UpdatedAt, ProvisionUpdatedAt time.Time
}

// nodeFields are the fields requested for one node, with the microversion that introduced each.
var nodeFields = []struct {
	name  string
	minor int
}{
	{"uuid", 1}, {"name", 5}, {"resource_class", 21}, {"provision_state", 1}, {"target_provision_state", 1},
	{"power_state", 1}, {"target_power_state", 1}, {"maintenance", 1}, {"properties", 1}, {"traits", 37},
	{"instance_uuid", 1}, {"allocation_uuid", 52}, {"last_error", 1}, {"instance_info", 1},
	{"provision_updated_at", 1},
}

// nodeJSON is Ironic's node document (the fields corral reads).
type nodeJSON struct {
	UUID                 string         `json:"uuid"`
	Name                 *string        `json:"name"`
	ResourceClass        *string        `json:"resource_class"`
	ProvisionState       *string        `json:"provision_state"`
	TargetProvisionState *string        `json:"target_provision_state"`
	PowerState           *string        `json:"power_state"`
	TargetPowerState     *string        `json:"target_power_state"`
	Maintenance          bool           `json:"maintenance"`
	Properties           map[string]any `json:"properties"`
	Traits               []string       `json:"traits"`
	InstanceUUID         *string        `json:"instance_uuid"`
	AllocationUUID       *string        `json:"allocation_uuid"`
	LastError            *string        `json:"last_error"`
	InstanceInfo         map[string]any `json:"instance_info"`
	CreatedAt            *string        `json:"created_at"`
	UpdatedAt            *string        `json:"updated_at"`
	ProvisionUpdatedAt   *string        `json:"provision_updated_at"`
}

func (j nodeJSON) uuid() string { return j.UUID }

func (j *nodeJSON) node() Node {
	n := Node{
		UUID: j.UUID, Name: derefStr(j.Name), ResourceClass: derefStr(j.ResourceClass),
		ProvisionState: derefStr(j.ProvisionState), TargetProvisionState: derefStr(j.TargetProvisionState),
		PowerState: derefStr(j.PowerState), TargetPowerState: derefStr(j.TargetPowerState), Maintenance: j.Maintenance,
		Properties: stringifyMap(j.Properties), Traits: slices.Sorted(slices.Values(j.Traits)),
		InstanceUUID: derefStr(j.InstanceUUID), AllocationUUID: derefStr(j.AllocationUUID), LastError: derefStr(j.LastError),
		InstanceInfo: stringifyMap(j.InstanceInfo),
	}
	if n.Traits == nil {
		n.Traits = []string{}
	}
	n.CreatedAt, n.UpdatedAt, n.ProvisionUpdatedAt = parseTime(j.CreatedAt), parseTime(j.UpdatedAt), parseTime(j.ProvisionUpdatedAt)
	switch caps := j.Properties["capabilities"].(type) {
	case map[string]any:
		n.Capabilities = stringifyMap(caps)
	case string:
		n.Capabilities = ParseCapabilities(caps)
	default:
		n.Capabilities = map[string]string{}
	}
	return n
}

// parseTime reads one of Ironic's timestamps ("2026-11-30T14:29:27.197229+00:00"); null or
// unreadable is zero.
func parseTime(p *string) time.Time {
	if p == nil {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, *p)
	if err != nil {
		// Timestamps Ironic writes without an offset are UTC.
		if t, err = time.Parse("2006-01-02T15:04:05.999999", *p); err != nil {
			return time.Time{}
		}
	}
	return t.UTC()
}

func derefStr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// stringifyMap renders a JSON object's values as strings; null values are dropped.
func stringifyMap(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := stringify(v); ok {
			out[k] = s
		}
	}
	return out
}

func stringify(v any) (string, bool) {
	switch t := v.(type) {
	case nil:
		return "", false
	case string:
		return t, true
	case bool:
		return strconv.FormatBool(t), true
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return strconv.FormatInt(i, 10), true
		}
		if f, err := t.Float64(); err == nil {
			return strconv.FormatFloat(f, 'f', -1, 64), true
		}
		return t.String(), true
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), true
	default:
		b, err := json.Marshal(t)
		if err != nil {
			return fmt.Sprint(t), true
		}
		return string(b), true
	}
}

// ParseCapabilities parses Ironic's capabilities string "k:v,k2:v2" like Ironic does: entries
// that are not exactly "key:value" with both parts non-empty are ignored. Whitespace around
// keys and values is trimmed. It never returns nil.
func ParseCapabilities(s string) map[string]string {
	out := map[string]string{}
	for item := range strings.SplitSeq(s, ",") {
		parts := strings.Split(item, ":")
		if len(parts) != 2 {
			continue
		}
		k, v := strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1])
		if k == "" || v == "" {
			continue
		}
		out[k] = v
	}
	return out
}

// fieldsParam is the fields= value of GetNode at the negotiated version.
func (c *Client) fieldsParam() string {
	var fs []string
	for _, f := range nodeFields {
		if c.minor >= f.minor {
			fs = append(fs, f.name)
		}
	}
	return strings.Join(fs, ",")
}

// GetNode returns one node by UUID or name.
func (c *Client) GetNode(ctx context.Context, id string) (Node, error) {
	return c.getNode(ctx, "GetNode", id)
}

// GetNodeDetail returns one node with its whole document, its timestamps included:
// Ironic refuses created_at and updated_at in ?fields=, so GetNode cannot read them.
func (c *Client) GetNodeDetail(ctx context.Context, id string) (Node, error) {
	return c.readNode(ctx, "GetNodeDetail", id, false)
}

func (c *Client) getNode(ctx context.Context, call, id string) (Node, error) {
	return c.readNode(ctx, call, id, true)
}

func (c *Client) readNode(ctx context.Context, call, id string, selected bool) (Node, error) {
	if id == "" {
		return Node{}, newError(call, ErrInvalid, "empty node id")
	}
	u := c.sc.ServiceURL("nodes", url.PathEscape(id))
	if selected && c.minor >= mvFields {
		u += "?fields=" + url.QueryEscape(c.fieldsParam())
	}
	var j nodeJSON
	if err := c.get(ctx, call, u, &j); err != nil {
		return Node{}, err
	}
	return j.node(), nil
}

// patchNode applies a JSON patch to a node (retried while the node is locked).
func (c *Client) patchNode(ctx context.Context, call, id string, ops nodes.UpdateOpts) error {
	return c.do(ctx, call, false, func(ctx context.Context) error {
		return nodes.Update(ctx, c.sc, id, ops).Err
	})
}

// ReserveNode sets the node's instance_uuid: the reservation of API versions without
// allocations. It returns nil if the node already has instanceUUID, and ErrConflict if it
// has another one (or instanceUUID is set on another node).
func (c *Client) ReserveNode(ctx context.Context, nodeID, instanceUUID string) error {
	const call = "ReserveNode"
	if instanceUUID == "" {
		return newError(call, ErrInvalid, "empty instance UUID")
	}
	err := c.patchNode(ctx, call, nodeID, nodes.UpdateOpts{
		nodes.UpdateOperation{Op: nodes.AddOp, Path: "/instance_uuid", Value: instanceUUID}})
	if err == nil || !errors.Is(err, ErrConflict) {
		return err
	}
	n, gerr := c.getNode(ctx, call, nodeID)
	if gerr == nil && strings.EqualFold(n.InstanceUUID, instanceUUID) {
		return nil
	}
	return err
}

// ReleaseNode removes the node's instance_uuid if it is instanceUUID. A node without an
// instance, or reserved by another instance, is left alone (nil: instanceUUID does not hold it).
func (c *Client) ReleaseNode(ctx context.Context, nodeID, instanceUUID string) error {
	const call = "ReleaseNode"
	n, err := c.getNode(ctx, call, nodeID)
	if err != nil {
		return err
	}
	if n.InstanceUUID == "" {
		return nil
	}
	if !strings.EqualFold(n.InstanceUUID, instanceUUID) {
		c.log.Warn("ironic node held by another instance; not released", "node", n.UUID,
			"instance", n.InstanceUUID, "want", instanceUUID)
		return nil
	}
	return c.patchNode(ctx, call, nodeID, nodes.UpdateOpts{
		nodes.UpdateOperation{Op: nodes.RemoveOp, Path: "/instance_uuid"}})
}
