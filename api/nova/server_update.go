package nova

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
)

// The edits of a server as Nova's servers controller takes them: PUT
// /servers/{id} (name, description, access addresses) and the rebuild
// action (a new image, and the same fields with metadata, key pair and
// user data).

// commandKnower is the part of the cluster that tells whether every live
// peer applies a command type (cluster.Node.CommandKnown).
type commandKnower interface {
	CommandKnown(fsm.CommandType) bool
}

// known reports whether the commands of every type ts may be proposed:
// every live peer applies them.
func (h *Handlers) known(ts ...fsm.CommandType) bool {
	k, ok := h.st.Cluster.(commandKnower)
	if !ok {
		return false
	}
	for _, t := range ts {
		if !k.CommandKnown(t) {
			return false
		}
	}
	return true
}

// notYet is the answer to a field the cluster cannot keep until every
// peer runs a version that does.
func notYet(fields string) error {
	return core.BadRequest("%s cannot be set until every peer of the cluster runs a version that keeps them", fields)
}

// checkDescriptionField checks a description (null clears it) against
// the request's microversion, as Nova's schemas from 2.19.
func checkDescriptionField(c echo.Context, d optString) error {
	if !d.Set {
		return nil
	}
	if !mvAtLeast(c, 2, 19) {
		return unexpected("description", "2.19")
	}
	if d.Null {
		return nil
	}
	if err := checkDescription("description", d.Value, maxNameLen); err != nil {
		return err
	}
	if err := fsm.ValidateDescription(d.Value); err != nil {
		return invalidInput("description", d.Value, "a description is printable text")
	}
	return nil
}

// UpdateServer is PUT /servers/{id}: the name, description (2.19) and
// access addresses. OS-DCF:diskConfig is taken and ignored, as Nova's
// Ironic driver takes it. The answer is the server's update view.
func (h *Handlers) UpdateServer(c echo.Context) error {
	var body serverUpdateRequest
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	in := body.Server
	if in == nil {
		return core.BadRequest(`the body must be {"server": {...}}`)
	}
	if err := checkDiskConfig(in.DiskConfig); err != nil {
		return err
	}
	if err := checkAccessIPs(in.AccessIPv4, in.AccessIPv6); err != nil {
		return err
	}
	if err := checkDescriptionField(c, in.Description); err != nil {
		return err
	}
	if in.Name != nil {
		if err := checkName("name", *in.Name); err != nil {
			return err
		}
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	v, err := h.visibleServer(c, c.Param("id"))
	if err != nil {
		return err
	}
	fields := in.Description.Set || in.AccessIPv4 != nil || in.AccessIPv6 != nil
	if in.Name == nil && !fields { // nothing changes
		return c.JSON(http.StatusOK, map[string]any{"server": h.serverView(c, serverUpdate, v)})
	}
	if v.Locked && core.CallerOf(c).Role != core.RoleAdmin {
		return echo.NewHTTPError(http.StatusConflict, fmt.Sprintf("Instance %s is locked", v.ID))
	}
	var cmd fsm.Command
	switch {
	case h.known(fsm.CmdUpdateServerFields):
		cmd = &fsm.UpdateServerFields{ID: v.ID, Name: in.Name, Description: in.Description.change(),
			AccessIPv4: in.AccessIPv4, AccessIPv6: in.AccessIPv6}
	case fields:
		return notYet("A server's description and access addresses")
	default:
		cmd = &fsm.UpdateServer{ID: v.ID, Name: in.Name}
	}
	if err := h.st.ProposeAndRead(c, cmd); err != nil {
		return actionConflict(err, v.ID)
	}
	cur, err := h.st.Store().Server(v.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"server": h.serverView(c, serverUpdate, cur)})
}

// rebuild redeploys the server's node with a new image, changing the
// fields the request gives at once, as Nova does when it accepts it.
func (h *Handlers) rebuild(c echo.Context, v fsm.Server, raw json.RawMessage, admin bool) error {
	var r rebuildAction
	if err := strictJSON(raw, &r); err != nil {
		return err
	}
	if r.ImageRef == "" {
		return core.BadRequest("imageRef is required: the image to rebuild the server with")
	}
	preserve := false
	if len(r.PreserveEphemeral) > 0 {
		b, err := novaBoolean("preserve_ephemeral", r.PreserveEphemeral)
		if err != nil {
			return err
		}
		preserve = b
	}
	if err := checkDiskConfig(r.DiskConfig); err != nil {
		return err
	}
	if err := checkAccessIPs(r.AccessIPv4, r.AccessIPv6); err != nil {
		return err
	}
	if err := checkDescriptionField(c, r.Description); err != nil {
		return err
	}
	if r.Name != nil {
		if err := checkName("name", *r.Name); err != nil {
			return err
		}
	}
	if err := checkMetadata(r.Metadata); err != nil {
		return err
	}
	if r.KeyName.Set {
		if !mvAtLeast(c, 2, 54) {
			return unexpected("key_name", "2.54")
		}
		if !r.KeyName.Null {
			if err := checkName("key_name", r.KeyName.Value); err != nil {
				return err
			}
		}
	}
	if r.UserData.Set {
		if !mvAtLeast(c, 2, 57) {
			return unexpected("user_data", "2.57")
		}
		if err := checkUserData(r.UserData.Value); err != nil {
			return err
		}
	}
	pass, err := adminPassword(r.AdminPass)
	if err != nil {
		return err
	}
	image, im, err := h.checkImageRef(c, r.ImageRef)
	if err != nil {
		return err
	}
	if err := checkImageFits(im, v.Flavor); err != nil {
		return err
	}
	if !h.known(fsm.CmdRebuildServer) {
		if r.Name != nil || r.Metadata != nil || r.Description.Set || r.AccessIPv4 != nil || r.AccessIPv6 != nil ||
			r.KeyName.Set || r.UserData.Set || preserve {
			return notYet("A rebuild's name, metadata, description, access addresses, key pair, user data and preserve_ephemeral")
		}
		return h.requestAction(c, v, &fsm.RequestServerAction{ID: v.ID, Kind: fsm.ActionRebuild, ImageRef: image, Admin: admin}, true)
	}
	cmd := &fsm.RebuildServer{ID: v.ID, ImageRef: image, Admin: admin, Name: r.Name,
		SetMetadata: r.Metadata != nil, Metadata: r.Metadata, Description: r.Description.change(),
		AccessIPv4: r.AccessIPv4, AccessIPv6: r.AccessIPv6, KeyName: r.KeyName.change(),
		UserID: core.CallerOf(c).User, UserData: r.UserData.change(), PreserveEphemeral: preserve, AdminPass: pass}
	if err := h.st.ProposeAndRead(c, cmd); err != nil {
		return actionConflict(err, v.ID)
	}
	cur, err := h.st.Store().Server(v.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"server": h.serverViewPass(c, serverRebuild, cur, h.shownPassword(pass))})
}
