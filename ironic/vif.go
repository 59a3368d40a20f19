package ironic

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
)

// AttachVIF attaches a VIF (a Neutron port id) to the node. Already attached is success.
// With Ironic's noop network interface the attachment is accepted and not recorded.
func (c *Client) AttachVIF(ctx context.Context, nodeID, vifID string) error {
	const call = "AttachVIF"
	if c.minor < mvVIFs {
		return newError(call, ErrUnsupported, "VIFs need API 1.%d, negotiated %s", mvVIFs, c.version)
	}
	err := c.do(ctx, call, false, func(ctx context.Context) error {
		return nodes.AttachVirtualInterface(ctx, c.sc, nodeID, nodes.VirtualInterfaceOpts{ID: vifID}).ExtractErr()
	})
	if errors.Is(err, ErrConflict) && strings.Contains(FaultOf(err), "already attached") {
		return nil
	}
	return err
}

// DetachVIF detaches a VIF. A VIF that is not attached (or a node that is gone) is success.
func (c *Client) DetachVIF(ctx context.Context, nodeID, vifID string) error {
	const call = "DetachVIF"
	if c.minor < mvVIFs {
		return newError(call, ErrUnsupported, "VIFs need API 1.%d, negotiated %s", mvVIFs, c.version)
	}
	err := c.do(ctx, call, true, func(ctx context.Context) error {
		return nodes.DetachVirtualInterface(ctx, c.sc, nodeID, vifID).ExtractErr()
	})
	switch {
	case errors.Is(err, ErrNotFound):
		return nil
	case StatusOf(err) == http.StatusBadRequest && strings.Contains(FaultOf(err), "not attached"):
		return nil
	}
	return err
}

// ListVIFs returns the ids of the VIFs attached to the node, sorted. With Ironic's noop network
// interface the list is always empty.
func (c *Client) ListVIFs(ctx context.Context, nodeID string) ([]string, error) {
	const call = "ListVIFs"
	if c.minor < mvVIFs {
		return nil, newError(call, ErrUnsupported, "VIFs need API 1.%d, negotiated %s", mvVIFs, c.version)
	}
	var body struct {
		VIFs []struct {
			ID string `json:"id"`
		} `json:"vifs"`
	}
	u := c.sc.ServiceURL("nodes", url.PathEscape(nodeID), "vifs")
	if err := c.get(ctx, call, u, &body); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(body.VIFs))
	for _, v := range body.VIFs {
		out = append(out, v.ID)
	}
	slices.Sort(out)
	return out, nil
}
