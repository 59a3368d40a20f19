// Package neutron is corral's client of OpenStack Networking (Neutron's
// v2.0 API), for what tenant networks on bare metal and hypervisor hosts
// need: networks (list and show, with the shared/project visibility Nova
// applies), subnets (show) and ports (create with a device, a vnic type and
// a host binding; list by device or network; show; update and unbind;
// delete), and what the leader's port reaper (neutron/reaper) needs: the
// ports corral marked (CreatedByCorral, listed by Neutron's description
// filter) with their revision, and a delete or a give-back made only at
// the revision read (If-Match; ErrChanged otherwise).
//
// It talks to Neutron as corral's own service user (Nova's [neutron]
// options: password authentication against Keystone, the endpoint from the
// catalog unless endpoint_override is set) or, with auth_type none, with no
// token to a noauth Neutron at endpoint_override. The token is renewed
// before it expires and once more when Neutron answers 401.
//
// Errors wrap the package's sentinels (ErrNotFound, ErrConflict,
// ErrInvalid, ErrUnauthorized, ErrUnavailable) and, for an answer of
// Neutron, an *APIError with Neutron's own error type and message. It
// never imports corral's internals; consumers declare the interface of the
// calls they use.
package neutron
