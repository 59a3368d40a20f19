package admin

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// AdoptServer handles POST /v1/manage/adopt-server (admin only). The
// leader chooses the owner like for any new server. Adopting a server
// that already holds the node answers 200 with adopted=false; 201 when
// this request committed it.
func (h *Handlers) AdoptServer(c echo.Context) error {
	if err := core.RequireAdmin(c); err != nil {
		return err
	}
	var in wire.AdoptServerRequest
	if err := core.BindStrict(c, &in); err != nil {
		return err
	}
	in.ID, in.NodeUUID = strings.ToLower(strings.TrimSpace(in.ID)), strings.ToLower(strings.TrimSpace(in.NodeUUID))
	switch {
	case in.ID == "":
		return core.BadRequest("id (the instance's uuid) is required")
	case in.NodeUUID == "":
		return core.BadRequest("node_uuid (the Ironic node the instance is deployed on) is required")
	case in.Name == "":
		return core.BadRequest("name is required")
	case in.ImageRef == "":
		return core.BadRequest("image_ref is required")
	}
	flavor := adoptedFlavor(in.Flavor)
	fsm.NormalizeFlavor(&flavor)
	if err := fsm.ValidateFlavor(flavor); err != nil {
		return fmt.Errorf("embedded flavor: %w", err)
	}
	if cur, err := h.st.Store().Server(in.ID); err == nil && cur.Live() && cur.NodeUUID == in.NodeUUID {
		return c.JSON(http.StatusOK, wire.AdoptServerResponse{Server: h.ownerView(cur)})
	}
	cmd := &fsm.AdoptServer{ID: in.ID, Name: in.Name, Flavor: flavor, ImageRef: in.ImageRef, NodeUUID: in.NodeUUID,
		AllocationUUID: in.AllocationUUID, ProjectID: in.ProjectID, UserID: in.UserID, Metadata: in.Metadata}
	if err := h.st.ProposeAndRead(c, cmd); err != nil {
		return err
	}
	view := wire.OwnerView{ServerID: in.ID, Status: string(fsm.StatusActive), Node: in.NodeUUID, Host: cmd.Host}
	if cur, err := h.st.Store().Server(in.ID); err == nil {
		view = h.ownerView(cur)
	}
	return c.JSON(http.StatusCreated, wire.AdoptServerResponse{Server: view, Adopted: true})
}
