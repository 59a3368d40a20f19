package neutron

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// PortState is a port with what says who made it and whether it changed:
// its description (also Port's: this one, the shallower, is the one
// decoded), its revision (Neutron's revision_number, raised by
// every change) and its timestamps. (Port is not its first field:
// gophercloud decodes a struct that starts with an embedded one field by
// field, which a time.Time does not survive.)
type PortState struct {
	Description string `json:"description"`
	Port
	RevisionNumber int       `json:"revision_number"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// PortsDescribed lists the ports whose description is exactly description
// (every page), filtered by Neutron.
func (c *Client) PortsDescribed(ctx context.Context, description string) ([]PortState, error) {
	if description == "" {
		return nil, fmt.Errorf("%w: a port listing by description needs one", ErrInvalid)
	}
	var out []PortState
	err := c.do(ctx, "listing the ports described "+strconv.Quote(description), func(ctx context.Context, sc *gophercloud.ServiceClient) error {
		pages, err := ports.List(sc, ports.ListOpts{Description: description}).AllPages(ctx)
		if err != nil {
			return err
		}
		return ports.ExtractPortsInto(pages, &out)
	})
	return out, err
}

// PortState reads one port with its description and revision.
func (c *Client) PortState(ctx context.Context, id string) (PortState, error) {
	var out PortState
	err := c.do(ctx, "port "+id, func(ctx context.Context, sc *gophercloud.ServiceClient) error {
		return ports.Get(ctx, sc, id).ExtractIntoStructPtr(&out, "port")
	})
	return out, err
}

// ifRevision is the header that makes Neutron carry out a change only
// while the port is at revision rev (412 otherwise).
func ifRevision(rev int) map[string]string {
	return map[string]string{"If-Match": "revision_number=" + strconv.Itoa(rev)}
}

// DeletePortAtRevision deletes the port only if it is still at revision
// rev: a port changed since it was read is left alone and the error wraps
// ErrChanged. A port already gone is no error.
func (c *Client) DeletePortAtRevision(ctx context.Context, id string, rev int) error {
	what := fmt.Sprintf("deleting port %s at revision %d", id, rev)
	err := c.conditional(ctx, what, func(ctx context.Context, sc *gophercloud.ServiceClient) error {
		_, err := sc.Delete(ctx, sc.ServiceURL("ports", url.PathEscape(id)), &gophercloud.RequestOpts{
			MoreHeaders: ifRevision(rev), OkCodes: []int{http.StatusNoContent}})
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// ReleasePortAtRevision gives a port back as its owner would once its
// server is gone, only if it is still at revision rev: device_id,
// device_owner and binding:host_id emptied, binding:profile cleared, then
// (a second update, once unbound, as Ironic does) a new MAC address from
// Neutron (mac_address null), so that the NIC's MAC it may carry never
// clashes with the next port on the network. A port changed since it was
// read is left alone (ErrChanged); one changed between the two updates
// keeps its MAC (ErrChanged, with the port as it was unbound).
func (c *Client) ReleasePortAtRevision(ctx context.Context, id string, rev int) (PortState, error) {
	var out PortState
	put := func(rev int, body map[string]any) func(context.Context, *gophercloud.ServiceClient) error {
		return func(ctx context.Context, sc *gophercloud.ServiceClient) error {
			var r gophercloud.Result
			_, r.Err = sc.Put(ctx, sc.ServiceURL("ports", url.PathEscape(id)), map[string]any{"port": body}, &r.Body,
				&gophercloud.RequestOpts{MoreHeaders: ifRevision(rev), OkCodes: []int{http.StatusOK}})
			return r.ExtractIntoStructPtr(&out, "port")
		}
	}
	unbind := map[string]any{"device_id": "", "device_owner": "", "binding:host_id": "", "binding:profile": map[string]any{}}
	if err := c.conditional(ctx, fmt.Sprintf("unbinding port %s at revision %d", id, rev), put(rev, unbind)); err != nil {
		return out, err
	}
	unbound := out
	if err := c.conditional(ctx, fmt.Sprintf("resetting the MAC of port %s at revision %d", id, unbound.RevisionNumber),
		put(unbound.RevisionNumber, map[string]any{"mac_address": nil})); err != nil {
		return unbound, err
	}
	return out, nil
}

// conditional runs a call carrying If-Match: Neutron's 412 becomes
// ErrChanged, every other answer is converted as by do.
func (c *Client) conditional(ctx context.Context, what string, call func(context.Context, *gophercloud.ServiceClient) error) error {
	err := c.do(ctx, what, func(ctx context.Context, sc *gophercloud.ServiceClient) error {
		err := call(ctx, sc)
		var rc gophercloud.ErrUnexpectedResponseCode
		if errors.As(err, &rc) && rc.Actual == http.StatusPreconditionFailed {
			return &changed{apiError(rc.Method, rc.URL, rc.Actual, rc.Body)}
		}
		return err
	})
	var ch *changed
	if errors.As(err, &ch) {
		return fmt.Errorf("%w: %s: %w", ErrChanged, what, ch.ae)
	}
	return err
}

// changed carries a 412 through do, which would take it for an outage.
type changed struct{ ae *APIError }

func (e *changed) Error() string { return e.ae.Error() }
