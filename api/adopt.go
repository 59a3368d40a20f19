package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/fsm"
)

// AdoptServerPath commits an instance already deployed on an Ironic node
// (brought over from another deployment) as a server ACTIVE on it.
const AdoptServerPath = "/v1/manage/adopt-server"

// AdoptServerRequest is the body of POST /v1/manage/adopt-server.
type AdoptServerRequest struct {
	ID             string            `json:"id"` // the instance's uuid
	Name           string            `json:"name"`
	Flavor         fsm.Flavor        `json:"flavor"` // embedded in the server
	ImageRef       string            `json:"image_ref"`
	NodeUUID       string            `json:"node_uuid"`
	AllocationUUID string            `json:"allocation_uuid,omitempty"`
	ProjectID      string            `json:"project_id,omitempty"`
	UserID         string            `json:"user_id,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
}

// AdoptServerResponse is the answer: the server's owner view and whether
// this request committed it (false: it was adopted before).
type AdoptServerResponse struct {
	Server  OwnerView `json:"server"`
	Adopted bool      `json:"adopted"`
}

// adoptServer handles POST /v1/manage/adopt-server (admin only). The
// leader chooses the owner like for any new server. Adopting a server
// that already holds the node answers 200 with adopted=false; 201 when
// this request committed it.
func (s *Server) adoptServer(c echo.Context) error {
	if err := requireAdmin(c); err != nil {
		return err
	}
	var in AdoptServerRequest
	if err := bindStrict(c, &in); err != nil {
		return err
	}
	in.ID, in.NodeUUID = strings.ToLower(strings.TrimSpace(in.ID)), strings.ToLower(strings.TrimSpace(in.NodeUUID))
	switch {
	case in.ID == "":
		return badRequest("id (the instance's uuid) is required")
	case in.NodeUUID == "":
		return badRequest("node_uuid (the Ironic node the instance is deployed on) is required")
	case in.Name == "":
		return badRequest("name is required")
	case in.ImageRef == "":
		return badRequest("image_ref is required")
	}
	fsm.NormalizeFlavor(&in.Flavor)
	if err := fsm.ValidateFlavor(in.Flavor); err != nil {
		return fmt.Errorf("embedded flavor: %w", err)
	}
	if cur, err := s.c.Store().Server(in.ID); err == nil && cur.Live() && cur.NodeUUID == in.NodeUUID {
		return c.JSON(http.StatusOK, AdoptServerResponse{Server: s.ownerView(cur)})
	}
	cmd := &fsm.AdoptServer{ID: in.ID, Name: in.Name, Flavor: in.Flavor, ImageRef: in.ImageRef, NodeUUID: in.NodeUUID,
		AllocationUUID: in.AllocationUUID, ProjectID: in.ProjectID, UserID: in.UserID, Metadata: in.Metadata}
	if err := s.propose(c, cmd); err != nil {
		return err
	}
	view := OwnerView{ServerID: in.ID, Status: string(fsm.StatusActive), Node: in.NodeUUID, Host: cmd.Host}
	if cur, err := s.c.Store().Server(in.ID); err == nil {
		view = s.ownerView(cur)
	}
	return c.JSON(http.StatusCreated, AdoptServerResponse{Server: view, Adopted: true})
}

// requireAdmin refuses tokens that are not admin, whatever the route
// table says (for admin-only reads in particular).
func requireAdmin(c echo.Context) error {
	if role, _ := c.Get(ctxRole).(Role); role != RoleAdmin {
		return fmt.Errorf("%w: %s %s needs an admin token", ErrForbidden, c.Request().Method, c.Request().URL.Path)
	}
	return nil
}
