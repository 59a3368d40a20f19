package ironic

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
)

// Port is an Ironic port (a NIC of a node).
type Port struct {
	UUID, NodeUUID, Address string
	Extra                   map[string]string // stringified like Node.Properties
}

type portJSON struct {
	UUID     string         `json:"uuid"`
	NodeUUID *string        `json:"node_uuid"`
	Address  string         `json:"address"`
	Extra    map[string]any `json:"extra"`
}

func (j portJSON) uuid() string { return j.UUID }

func (j portJSON) port() Port {
	return Port{UUID: j.UUID, NodeUUID: derefStr(j.NodeUUID), Address: strings.ToLower(j.Address), Extra: stringifyMap(j.Extra)}
}

// PortSpec is a port to create.
type PortSpec struct {
	NodeUUID string
	Address  string // MAC
	Extra    map[string]any
}

// CreatePort creates a port. A port with the same MAC that exists already
// is ErrConflict: find it with PortByAddress.
func (c *Client) CreatePort(ctx context.Context, spec PortSpec) (Port, error) {
	const call = "CreatePort"
	if spec.NodeUUID == "" || spec.Address == "" {
		return Port{}, newError(call, ErrInvalid, "a port needs a node and a MAC address")
	}
	body := map[string]any{"node_uuid": spec.NodeUUID, "address": spec.Address}
	if len(spec.Extra) > 0 {
		body["extra"] = spec.Extra
	}
	var j portJSON
	// Ironic refuses a second port with the same MAC: a repeated POST is safe.
	err := c.do(ctx, call, true, func(ctx context.Context) error {
		_, err := c.sc.Post(ctx, c.sc.ServiceURL("ports"), body, &j, &gophercloud.RequestOpts{OkCodes: []int{201}})
		return err
	})
	if err != nil {
		return Port{}, err
	}
	return j.port(), nil
}

// ListPorts returns the ports of one node, or of every node when nodeID is
// empty, following Ironic's pagination.
func (c *Client) ListPorts(ctx context.Context, nodeID string) ([]Port, error) {
	q := url.Values{}
	if nodeID != "" {
		q.Set("node", nodeID)
	}
	return c.listPorts(ctx, "ListPorts", q)
}

// PortByAddress returns the port with a MAC address, or ErrNotFound.
func (c *Client) PortByAddress(ctx context.Context, mac string) (Port, error) {
	ports, err := c.listPorts(ctx, "PortByAddress", url.Values{"address": {strings.ToLower(mac)}})
	if err != nil {
		return Port{}, err
	}
	for _, p := range ports {
		if strings.EqualFold(p.Address, mac) {
			return p, nil
		}
	}
	return Port{}, newError("PortByAddress", ErrNotFound, "no port has MAC address %s", mac)
}

func (c *Client) listPorts(ctx context.Context, call string, q url.Values) ([]Port, error) {
	var out []Port
	_, err := listPages[portPage](ctx, c, listing{call: call, base: c.sc.ServiceURL("ports", "detail"), query: q}, func(p *portJSON) bool {
		out = append(out, p.port())
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

type portPage struct {
	Ports []portJSON `json:"ports"`
	Next  string     `json:"next"`
}

func (p *portPage) items() []portJSON { return p.Ports }
func (p *portPage) nextLink() string  { return p.Next }
func (p *portPage) decode(dec *json.Decoder) error {
	return decodeItems(dec, "ports", &p.Ports, &p.Next)
}
