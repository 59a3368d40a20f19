package fsm

import (
	"fmt"
	"maps"
)

// RebuildServer is a rebuild as Nova's API takes it: the new image (an
// action, as RequestServerActionWithID commits it, with the request's id)
// and, changed at once as Nova changes them when it accepts the rebuild,
// the server's name, metadata, description, access addresses, key pair
// (2.54) and user data (2.57). The owner redeploys the node with the new
// image and a config drive written from the server as it is then, so the
// new key and user data reach it, and AdminPass (Server.AdminPass: ""
// for none) in its meta_data. PreserveEphemeral asks Ironic to keep the node's ephemeral partition
// (instance_info/preserve_ephemeral, as Nova's Ironic driver writes it).
type RebuildServer struct {
	Meta
	ID       string `json:"id"`
	ImageRef string `json:"image_ref"`
	// Admin lets the request rebuild a locked server, as Nova lets admins.
	Admin bool    `json:"admin,omitempty"`
	Name  *string `json:"name,omitempty"`
	// Metadata replaces the server's when SetMetadata is set.
	SetMetadata bool              `json:"set_metadata,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	Description *StringChange     `json:"description,omitempty"`
	AccessIPv4  *string           `json:"access_ip_v4,omitempty"`
	AccessIPv6  *string           `json:"access_ip_v6,omitempty"`
	// KeyName names a key pair of UserID's (the caller's, as in Nova: a
	// user's key pairs are the user's) that replaces the server's; Null
	// removes it.
	KeyName *StringChange `json:"key_name,omitempty"`
	UserID  string        `json:"user_id,omitempty"`
	// UserData replaces the server's (base64, at most MaxUserDataLen);
	// Null removes it.
	UserData          *StringChange `json:"user_data,omitempty"`
	PreserveEphemeral bool          `json:"preserve_ephemeral,omitempty"`
	AdminPass         string        `json:"admin_pass,omitempty"`
}

// Type implements Command.
func (*RebuildServer) Type() CommandType { return CmdRebuildServer }

func init() {
	register[RebuildServer](CmdRebuildServer, "RebuildServer", applyRebuildServer)
}

func applyRebuildServer(st *state, c *RebuildServer) (any, error) {
	switch {
	case len(c.RequestID) > maxRequestIDLen:
		return nil, fmt.Errorf("%w: request id is %d characters, more than %d", ErrInvalid, len(c.RequestID), maxRequestIDLen)
	case len(c.UserID) > maxServerNameLen:
		return nil, fmt.Errorf("%w: user ids must be at most %d characters", ErrInvalid, maxServerNameLen)
	case len(c.ImageRef) > MaxImageRefLen:
		return nil, fmt.Errorf("%w: imageRef must be at most %d characters", ErrInvalid, MaxImageRefLen)
	case len(c.AdminPass) > MaxAdminPassLen:
		return nil, fmt.Errorf("%w: an admin password is at most %d bytes", ErrInvalid, MaxAdminPassLen)
	case !c.SetMetadata && len(c.Metadata) > 0:
		return nil, fmt.Errorf("%w: a rebuild's metadata needs set_metadata", ErrInvalid)
	}
	s, err := startAction(st, &RequestServerAction{Meta: c.Meta, ID: c.ID, Kind: ActionRebuild, ImageRef: c.ImageRef, Admin: c.Admin}, c.RequestID)
	if err != nil {
		return nil, err
	}
	if err := editFields(&s, c.Name, c.Description, c.AccessIPv4, c.AccessIPv6); err != nil {
		return nil, err
	}
	if c.SetMetadata {
		if err := checkMetadata(st, s.Project(), c.Metadata, len(c.Metadata)); err != nil {
			return nil, err
		}
		s.Metadata = nil
		if len(c.Metadata) > 0 {
			s.Metadata = maps.Clone(c.Metadata)
		}
	}
	if k := c.KeyName; k != nil {
		s.KeyName, s.KeyData = "", ""
		if !k.Null {
			kp, ok := st.keypairs[keyPairKey(orAdmin(c.UserID), k.Value)]
			if !ok {
				return nil, fmt.Errorf("%w: Invalid key_name provided: the user has no key pair %q (list them with openstack keypair list)", ErrInvalid, k.Value)
			}
			s.KeyName, s.KeyData = kp.Name, kp.PublicKey
		}
	}
	if u := c.UserData; u != nil {
		s.UserData = ""
		if !u.Null {
			if len(u.Value) > MaxUserDataLen {
				return nil, fmt.Errorf("%w: user_data is %d bytes long: at most %d (base64) are allowed", ErrInvalid, len(u.Value), MaxUserDataLen)
			}
			s.UserData = u.Value
		}
	}
	s.Action.PreserveEphemeral = c.PreserveEphemeral
	s.AdminPass = c.AdminPass
	st.putServer(s)
	return cloneServer(s), nil
}
