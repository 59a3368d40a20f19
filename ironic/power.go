package ironic

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
)

// Power states and targets (Ironic's spelling).
const (
	PowerOn           = "power on"
	PowerOff          = "power off"
	PowerReboot       = "rebooting"      // hard: a power cycle
	PowerSoftReboot   = "soft rebooting" // the OS is asked (ACPI); drivers may lack it
	PowerSoftOff      = "soft power off"
	powerStateUnknown = ""
)

// WaitPowerState polls the node until its power state is want with no
// target power state. A node that reports a last_error while its target
// clears in another state fails with ErrDeployFailed and Ironic's reason.
func (c *Client) WaitPowerState(ctx context.Context, nodeID, want string) (Node, error) {
	const call = "WaitPowerState"
	var n Node
	var failed error
	err := c.poll(ctx, call, func() (bool, string, error) {
		var err error
		n, err = c.getNode(ctx, call, nodeID)
		if err != nil {
			return false, "", err
		}
		last := n.PowerState + "->" + n.TargetPowerState
		if n.TargetPowerState != powerStateUnknown {
			return false, last, nil
		}
		if n.PowerState == want {
			return true, last, nil
		}
		if n.LastError != "" {
			failed = &Error{Call: call, Kind: ErrDeployFailed, Fault: fmt.Sprintf(
				"node %s is %q (waiting for %q): %s", n.UUID, n.PowerState, want, n.LastError)}
			return true, last, nil
		}
		return false, last, nil
	})
	if err != nil {
		return n, err
	}
	return n, failed
}

// SetPowerState asks for a power state ("power on", "power off", "rebooting", ...). It does
// not wait for the transition.
func (c *Client) SetPowerState(ctx context.Context, nodeID, target string) error {
	return c.do(ctx, "SetPowerState", false, func(ctx context.Context) error {
		return nodes.ChangePowerState(ctx, c.sc, nodeID,
			nodes.PowerStateOpts{Target: nodes.TargetPowerState(target)}).ExtractErr()
	})
}
