package ironic

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
)

// Provision states corral acts on.
const (
	StateAvailable    = "available"
	StateActive       = "active"
	StateDeploying    = "deploying"
	StateWaitCallBack = "wait call-back"
	StateDeployFailed = "deploy failed"
	StateDeleting     = "deleting"
	StateCleaning     = "cleaning"
	StateCleanWait    = "clean wait"
	StateCleanFailed  = "clean failed"
	StateError        = "error"
)

// failedStates are the provision states in which a deployment (or its undoing) has failed.
var failedStates = map[string]bool{StateDeployFailed: true, StateError: true, StateCleanFailed: true}

// DeploySpec is what Deploy writes into instance_info before deploying.
type DeploySpec struct {
	ImageSource  string            // instance_info/image_source (required)
	RootGB       int               // instance_info/root_gb (0: not set)
	Capabilities map[string]string // instance_info/capabilities, a JSON object
	DisplayName  string            // instance_info/display_name
	ConfigDrive  string            // sent with the provision "active" request when not empty
	// ConfigDriveData, when set (and ConfigDrive is empty), is a config
	// drive Ironic builds itself (API 1.56+).
	ConfigDriveData *ConfigDrive
}

// ConfigDrive is the content of a config drive Ironic builds (the JSON
// form of the provision request's configdrive). Without NetworkData,
// Ironic writes the node's own network data (its ports and VIFs).
type ConfigDrive struct {
	MetaData    map[string]any // openstack/latest/meta_data.json
	UserData    string         // openstack/latest/user_data, as is ("" for none)
	NetworkData map[string]any // openstack/latest/network_data.json (nil: Ironic's)
}

// mvConfigDriveJSON is the Ironic API version that takes a config drive
// as a JSON object.
const mvConfigDriveJSON = 56

// Deploy writes spec into the node's instance_info and asks for provision state "active". It
// does not wait (see WaitProvisionState). A node already active or deploying with the same
// image (and display name, if given) is left alone; one with another image is ErrConflict.
func (c *Client) Deploy(ctx context.Context, nodeID string, spec DeploySpec) error {
	const call = "Deploy"
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
	if done, err := c.deployedAlready(call, n, spec); done || err != nil {
		return err
	}
	if n.ProvisionState != StateAvailable && n.ProvisionState != StateDeployFailed {
		return newError(call, ErrConflict, "node %s is in provision state %q and cannot be deployed", n.UUID, n.ProvisionState)
	}
	ops := nodes.UpdateOpts{nodes.UpdateOperation{Op: nodes.AddOp, Path: "/instance_info/image_source", Value: spec.ImageSource}}
	if spec.RootGB > 0 {
		ops = append(ops, nodes.UpdateOperation{Op: nodes.AddOp, Path: "/instance_info/root_gb", Value: spec.RootGB})
	}
	if len(spec.Capabilities) > 0 {
		ops = append(ops, nodes.UpdateOperation{Op: nodes.AddOp, Path: "/instance_info/capabilities", Value: spec.Capabilities})
	}
	if spec.DisplayName != "" {
		ops = append(ops, nodes.UpdateOperation{Op: nodes.AddOp, Path: "/instance_info/display_name", Value: spec.DisplayName})
	}
	if err := c.patchNode(ctx, call, n.UUID, ops); err != nil {
		return err
	}
	opts := provisionOpts(nodes.TargetActive, spec)
	err = c.setProvisionState(ctx, call, n.UUID, opts)
	if err == nil {
		c.log.Info("ironic deploy started", "node", n.UUID, "image", spec.ImageSource)
		return nil
	}
	// A concurrent Deploy of the same spec may have won the race.
	if n2, gerr := c.getNode(ctx, call, n.UUID); gerr == nil {
		if done, _ := c.deployedAlready(call, n2, spec); done {
			return nil
		}
	}
	return err
}

// deployedAlready reports whether n is active or deploying with spec's image, and an error if
// it is active or deploying with another one.
func (c *Client) deployedAlready(call string, n Node, spec DeploySpec) (bool, error) {
	switch n.ProvisionState {
	case StateActive, StateDeploying, StateWaitCallBack:
	default:
		return false, nil
	}
	if n.InstanceInfo["image_source"] == spec.ImageSource &&
		(spec.DisplayName == "" || n.InstanceInfo["display_name"] == spec.DisplayName) {
		return true, nil
	}
	return false, newError(call, ErrConflict, "node %s is %s with image %q (display name %q)", n.UUID,
		n.ProvisionState, n.InstanceInfo["image_source"], n.InstanceInfo["display_name"])
}

func (c *Client) setProvisionState(ctx context.Context, call, nodeID string, opts nodes.ProvisionStateOpts) error {
	return c.do(ctx, call, false, func(ctx context.Context) error {
		return nodes.ChangeProvisionState(ctx, c.sc, nodeID, opts).ExtractErr()
	})
}

// Undeploy asks for provision state "deleted" when the node is active, deploy failed, wait
// call-back or error; Ironic then removes the node's allocation and instance_info. A node
// that is available or already being torn down is left alone. A deploy in progress is waited
// for first. It does not wait for "available" (see WaitProvisionState).
func (c *Client) Undeploy(ctx context.Context, nodeID string) error {
	const call = "Undeploy"
	for {
		n, err := c.getNode(ctx, call, nodeID)
		if err != nil {
			return err
		}
		switch n.ProvisionState {
		case StateAvailable, StateDeleting, StateCleaning, StateCleanWait:
			return nil
		case StateActive, StateDeployFailed, StateWaitCallBack, StateError:
			err := c.setProvisionState(ctx, call, n.UUID, nodes.ProvisionStateOpts{Target: nodes.TargetDeleted})
			if err == nil {
				c.log.Info("ironic undeploy started", "node", n.UUID, "from", n.ProvisionState)
				return nil
			}
			// Someone else may have started the teardown meanwhile.
			if n2, gerr := c.getNode(ctx, call, n.UUID); gerr == nil {
				switch n2.ProvisionState {
				case StateAvailable, StateDeleting, StateCleaning, StateCleanWait:
					return nil
				}
			}
			return err
		case StateDeploying:
			if err := c.poll(ctx, call, func() (bool, string, error) {
				m, err := c.getNode(ctx, call, n.UUID)
				return err == nil && m.ProvisionState != StateDeploying, m.ProvisionState, err
			}); err != nil {
				return err
			}
		default:
			return newError(call, ErrConflict, "node %s is in provision state %q and cannot be undeployed",
				n.UUID, n.ProvisionState)
		}
	}
}

// WaitProvisionState polls the node every PollInterval until its provision state is want with
// no target state. A node that lands in "deploy failed", "error" or "clean failed" (unless
// that is want) is ErrDeployFailed, with Ironic's last_error in the message. The node is
// returned as last seen.
func (c *Client) WaitProvisionState(ctx context.Context, nodeID, want string) (Node, error) {
	const call = "WaitProvisionState"
	var n Node
	var failed error
	err := c.poll(ctx, call, func() (bool, string, error) {
		var err error
		n, err = c.getNode(ctx, call, nodeID)
		if err != nil {
			return false, "", err
		}
		last := n.ProvisionState + "->" + n.TargetProvisionState
		if n.ProvisionState == want && n.TargetProvisionState == "" {
			return true, last, nil
		}
		if failedStates[n.ProvisionState] && n.ProvisionState != want {
			failed = &Error{Call: call, Kind: ErrDeployFailed, Fault: fmt.Sprintf(
				"node %s is in provision state %q (waiting for %q): %s", n.UUID, n.ProvisionState, want, n.LastError)}
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
