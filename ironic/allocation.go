package ironic

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/allocations"
)

// AllocationRequest asks Ironic to reserve a node (POST /v1/allocations, API 1.52+).
type AllocationRequest struct {
	UUID           string            // the server id: the idempotency key (optional)
	Name           string            // hostname-like name, see AllocationName (optional)
	ResourceClass  string            // raw Ironic class, matched verbatim by Ironic (required)
	Traits         []string          // CUSTOM_* or standard trait names the node must have
	CandidateNodes []string          // node UUIDs or names to choose from (empty: any)
	Extra          map[string]string // free-form metadata stored on the allocation
}

// Allocation is an Ironic allocation. State is "allocating", "active" or "error".
type Allocation struct {
	UUID, Name, State, NodeUUID, ResourceClass, LastError string
	Traits                                                []string
	CandidateNodes                                        []string
	Extra                                                 map[string]string // stringified like Node.Properties
}

// Allocation states.
const (
	AllocationAllocating = "allocating"
	AllocationActive     = "active"
	AllocationError      = "error"
)

// AllocationName derives the allocation name of a server: "corral-" + the lowercased id, with
// every character outside [a-z0-9-] replaced by '-', cut to 63 characters. The result is a valid
// Ironic logical name at every microversion (hostname-safe) and never looks like a UUID.
func AllocationName(serverID string) string {
	var b strings.Builder
	b.WriteString("corral-")
	for _, r := range strings.ToLower(serverID) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	name := b.String()
	if len(name) > 63 {
		name = name[:63]
	}
	return strings.TrimRight(name, "-")
}

// allocJSON is Ironic's allocation document. Extra is decoded loosely: Ironic allows any JSON.
type allocJSON struct {
	UUID           string         `json:"uuid"`
	Name           *string        `json:"name"`
	State          string         `json:"state"`
	NodeUUID       *string        `json:"node_uuid"`
	ResourceClass  *string        `json:"resource_class"`
	LastError      *string        `json:"last_error"`
	Traits         []string       `json:"traits"`
	CandidateNodes []string       `json:"candidate_nodes"`
	Extra          map[string]any `json:"extra"`
}

func (j *allocJSON) allocation() Allocation {
	return Allocation{
		UUID: j.UUID, Name: derefStr(j.Name), State: j.State, NodeUUID: derefStr(j.NodeUUID),
		ResourceClass: derefStr(j.ResourceClass), LastError: derefStr(j.LastError),
		Traits: nonNilStrings(j.Traits), CandidateNodes: nonNilStrings(j.CandidateNodes), Extra: stringifyMap(j.Extra),
	}
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}

// allocationBody builds the POST body; unlike allocations.CreateOpts it carries uuid and
// non-string-typed extra.
type allocationBody map[string]any

func (b allocationBody) ToAllocationCreateMap() (map[string]any, error) { return b, nil }

func (c *Client) needAllocations(call string) error {
	if c.SupportsAllocations() {
		return nil
	}
	return newError(call, ErrUnsupported, "allocations need API 1.%d, negotiated %s", mvAllocations, c.version)
}

// CreateAllocation creates an allocation; Ironic picks the node asynchronously (see
// WaitAllocation). With a UUID it is idempotent: if an allocation with that UUID exists
// already (a retry), that allocation is returned.
func (c *Client) CreateAllocation(ctx context.Context, r AllocationRequest) (Allocation, error) {
	const call = "CreateAllocation"
	if err := c.needAllocations(call); err != nil {
		return Allocation{}, err
	}
	if r.ResourceClass == "" {
		return Allocation{}, newError(call, ErrInvalid, "resource class is required")
	}
	body := allocationBody{"resource_class": r.ResourceClass}
	if r.UUID != "" {
		body["uuid"] = r.UUID
	}
	if r.Name != "" {
		body["name"] = r.Name
	}
	if len(r.Traits) > 0 {
		body["traits"] = r.Traits
	}
	if len(r.CandidateNodes) > 0 {
		body["candidate_nodes"] = r.CandidateNodes
	}
	if len(r.Extra) > 0 {
		body["extra"] = r.Extra
	}
	var j allocJSON
	// With a client-chosen UUID a repeated POST cannot create a second allocation.
	err := c.do(ctx, call, r.UUID != "", func(ctx context.Context) error {
		return allocations.Create(ctx, c.sc, body).ExtractInto(&j)
	})
	if err == nil {
		return j.allocation(), nil
	}
	// Ironic reports a duplicate uuid or a duplicate name, whichever constraint its database
	// checks first; either way the allocation may be ours.
	if r.UUID != "" && errors.Is(err, ErrConflict) && strings.Contains(FaultOf(err), "already exists") {
		a, gerr := c.getAllocation(ctx, call, r.UUID)
		if gerr == nil {
			c.log.Debug("ironic allocation exists already", "uuid", a.UUID, "state", a.State)
			return a, nil
		}
	}
	return Allocation{}, err
}

// GetAllocation returns an allocation by UUID or name; ErrNotFound if it does not exist.
func (c *Client) GetAllocation(ctx context.Context, id string) (Allocation, error) {
	return c.getAllocation(ctx, "GetAllocation", id)
}

func (c *Client) getAllocation(ctx context.Context, call, id string) (Allocation, error) {
	if err := c.needAllocations(call); err != nil {
		return Allocation{}, err
	}
	if id == "" {
		return Allocation{}, newError(call, ErrInvalid, "empty allocation id")
	}
	var j allocJSON
	err := c.do(ctx, call, true, func(ctx context.Context) error {
		return allocations.Get(ctx, c.sc, id).ExtractInto(&j)
	})
	if err != nil {
		return Allocation{}, err
	}
	return j.allocation(), nil
}

// WaitAllocation polls an allocation every PollInterval until it is no longer allocating, or
// ctx is done. An allocation in state "error" is returned without an error: its LastError
// says why.
func (c *Client) WaitAllocation(ctx context.Context, id string) (Allocation, error) {
	const call = "WaitAllocation"
	var a Allocation
	err := c.poll(ctx, call, func() (bool, string, error) {
		var err error
		a, err = c.getAllocation(ctx, call, id)
		return err == nil && a.State != AllocationAllocating, a.State, err
	})
	return a, err
}

// DeleteAllocation deletes an allocation, which releases its node. A missing allocation is
// success. Ironic refuses (ErrConflict) while the node is active: undeploy instead.
func (c *Client) DeleteAllocation(ctx context.Context, id string) error {
	const call = "DeleteAllocation"
	if err := c.needAllocations(call); err != nil {
		return err
	}
	if id == "" {
		return newError(call, ErrInvalid, "empty allocation id")
	}
	err := c.do(ctx, call, true, func(ctx context.Context) error {
		return allocations.Delete(ctx, c.sc, id).ExtractErr()
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// BackfillAllocation records an allocation for a node that is active with
// an instance_uuid (API 1.58): Ironic gives it the instance's UUID. An
// allocation that exists already for that instance on that node is
// returned as it is. A refused backfill leaves an allocation in state
// error behind in Ironic; it is deleted before the error is returned.
func (c *Client) BackfillAllocation(ctx context.Context, nodeID, instanceUUID string) (Allocation, error) {
	const call = "BackfillAllocation"
	if err := c.needAllocations(call); err != nil {
		return Allocation{}, err
	}
	if c.minor < 58 {
		return Allocation{}, newError(call, ErrUnsupported, "backfilling allocations needs API 1.58, negotiated %s", c.version)
	}
	if a, err := c.getAllocation(ctx, call, instanceUUID); err == nil && a.State == AllocationActive {
		if !strings.EqualFold(a.NodeUUID, nodeID) {
			return Allocation{}, newError(call, ErrConflict, "allocation %s holds node %s, not %s", a.UUID, a.NodeUUID, nodeID)
		}
		return a, nil
	}
	var j allocJSON
	err := c.do(ctx, call, false, func(ctx context.Context) error {
		_, err := c.sc.Post(ctx, c.sc.ServiceURL("allocations"), map[string]any{"node": nodeID}, &j,
			&gophercloud.RequestOpts{OkCodes: []int{201}})
		return err
	})
	if err == nil {
		return j.allocation(), nil
	}
	if a, gerr := c.getAllocation(ctx, call, instanceUUID); gerr == nil {
		switch {
		case a.State == AllocationActive && strings.EqualFold(a.NodeUUID, nodeID):
			return a, nil // created meanwhile (a retry)
		case a.State == AllocationError:
			if derr := c.DeleteAllocation(ctx, a.UUID); derr != nil {
				c.log.Warn("could not delete a failed backfilled allocation", "allocation", a.UUID, "err", derr)
			}
		}
	}
	return Allocation{}, err
}
