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

// Rebuild redeploys an active (or failed) node with spec's image: it
// writes the image into instance_info and asks for provision state
// "rebuild" with spec's config drive. It does not wait (see
// WaitProvisionState). A node already deploying with spec's image is left
// alone, so a resumed rebuild does not start over.
func (c *Client) Rebuild(ctx context.Context, nodeID string, spec DeploySpec) error {
	const call = "Rebuild"
	if spec.ImageSource == "" {
		return newError(call, ErrInvalid, "image source is required")
	}
	if spec.ConfigDrive == "" && spec.ConfigDriveData != nil && c.minor < mvConfigDriveJSON {
		return newError(call, ErrUnsupported, "Ironic speaks API 1.%d here: a config drive given as JSON needs 1.%d (Ironic 14.0 or later)", c.minor, mvConfigDriveJSON)
	}
	n, err := c.getNode(ctx, call, nodeID)
	if err != nil {
		return err
	}
	if n.TargetProvisionState == StateActive && n.InstanceInfo["image_source"] == spec.ImageSource {
		return nil // rebuilding (or deploying) with this image already
	}
	if n.ProvisionState != StateActive && n.ProvisionState != StateDeployFailed && n.ProvisionState != StateError {
		return newError(call, ErrConflict, "node %s is in provision state %q and cannot be rebuilt", n.UUID, n.ProvisionState)
	}
	ops := nodes.UpdateOpts{nodes.UpdateOperation{Op: nodes.AddOp, Path: "/instance_info/image_source", Value: spec.ImageSource}}
	if spec.DisplayName != "" {
		ops = append(ops, nodes.UpdateOperation{Op: nodes.AddOp, Path: "/instance_info/display_name", Value: spec.DisplayName})
	}
	if err := c.patchNode(ctx, call, n.UUID, ops); err != nil {
		return err
	}
	opts := provisionOpts(nodes.TargetRebuild, spec)
	if err := c.setProvisionState(ctx, call, n.UUID, opts); err != nil {
		return err
	}
	c.log.Info("ironic rebuild started", "node", n.UUID, "image", spec.ImageSource)
	return nil
}

// provisionOpts is the provision request to target with spec's config
// drive (a prebuilt one, or the JSON object Ironic builds it from).
func provisionOpts(target nodes.TargetProvisionState, spec DeploySpec) nodes.ProvisionStateOpts {
	opts := nodes.ProvisionStateOpts{Target: target}
	switch {
	case spec.ConfigDrive != "":
		opts.ConfigDrive = spec.ConfigDrive
	case spec.ConfigDriveData != nil:
		opts.ConfigDrive = configDriveJSON(spec.ConfigDriveData)
	}
	return opts
}

// configDriveJSON is the provision request's configdrive object.
func configDriveJSON(cd *ConfigDrive) nodes.ConfigDrive {
	out := nodes.ConfigDrive{MetaData: cd.MetaData, NetworkData: cd.NetworkData}
	if cd.UserData != "" {
		out.UserData = cd.UserData
	}
	return out
}
