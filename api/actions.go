package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/fsm"
)

// Server actions (os-stop, os-start, reboot, rebuild, lock, unlock) and
// renames, as Nova has them. An action is committed as an intent; the
// server's owner host carries it out through Ironic and commits the
// outcome (see fsm/action.go and compute/action.go).

// Nova's power states (OS-EXT-STS:power_state).
const (
	powerNoState  = 0
	powerRunning  = 1
	powerShutdown = 4
)

// actionView sets what server actions change in Nova's view of a server:
// the status during a reboot or rebuild, the power state, the vm_state of
// a stopped server, and the lock.
func actionView(c echo.Context, v fsm.Server, out map[string]any) {
	switch v.TaskState {
	case fsm.TaskRebooting:
		out["status"] = "REBOOT"
	case fsm.TaskRebootingHard:
		out["status"] = "HARD_REBOOT"
	case fsm.TaskRebuilding:
		out["status"] = "REBUILD"
	}
	power := powerNoState
	switch v.Status {
	case fsm.StatusActive:
		power = powerRunning
	case fsm.StatusShutoff:
		power = powerShutdown
		out["OS-EXT-STS:vm_state"] = "stopped"
	}
	out["OS-EXT-STS:power_state"] = power
	out["locked"] = v.Locked
	if mvAtLeast(c, 2, 73) {
		out["locked_reason"] = nullable(v.LockedReason)
	}
}

// actionConflict maps the fsm's refusal of an action to Nova's answer.
func actionConflict(err error, id string) error {
	switch {
	case errors.Is(err, fsm.ErrNotFound):
		return notFound(id)
	case errors.Is(err, fsm.ErrConflict):
		msg := err.Error()
		if i := strings.Index(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		return echo.NewHTTPError(http.StatusConflict, msg)
	}
	return err
}

// serverAction is POST /servers/{id}/action.
func (s *Server) serverAction(c echo.Context) error {
	var body map[string]json.RawMessage
	if err := bindStrict(c, &body); err != nil {
		return err
	}
	if len(body) != 1 {
		keys := make([]string, 0, len(body))
		for k := range body {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return badRequest("the body must hold exactly one action, not %v", keys)
	}
	id := c.Param("id")
	if err := s.readBarrier(c); err != nil {
		return err
	}
	v, err := s.visibleServer(c, id)
	if err != nil {
		return err
	}
	admin := callerOf(c).role == RoleAdmin
	for name, raw := range body {
		switch name {
		case "os-stop", "os-start":
			kind := fsm.ActionStop
			if name == "os-start" {
				kind = fsm.ActionStart
			}
			return s.requestAction(c, v, &fsm.RequestServerAction{ID: v.ID, Kind: kind, Admin: admin}, false)
		case "reboot":
			var r struct {
				Type string `json:"type"`
			}
			if err := strictJSON(raw, &r); err != nil {
				return err
			}
			kind := fsm.ActionReboot
			switch strings.ToUpper(r.Type) {
			case "SOFT":
			case "HARD":
				kind = fsm.ActionRebootHard
			default:
				return badRequest("Invalid input for field/attribute type. Value: %s. %q is not one of ['HARD', 'Hard', 'hard', 'SOFT', 'Soft', 'soft']", r.Type, r.Type)
			}
			return s.requestAction(c, v, &fsm.RequestServerAction{ID: v.ID, Kind: kind, Admin: admin}, false)
		case "rebuild":
			return s.rebuild(c, v, raw, admin)
		case "lock", "unlock":
			return s.lock(c, v, name == "lock", raw)
		}
		return badRequest("There is no such action: %s", name)
	}
	return nil
}

// strictJSON decodes an action's argument, rejecting unknown fields.
func strictJSON(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("malformed action: %v", err)
	}
	return nil
}

func (s *Server) requestAction(c echo.Context, v fsm.Server, cmd *fsm.RequestServerAction, show bool) error {
	if err := s.propose(c, cmd); err != nil {
		return actionConflict(err, v.ID)
	}
	if !show {
		return c.NoContent(http.StatusAccepted)
	}
	cur, err := s.c.Store().Server(v.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"server": s.novaServerView(c, cur)})
}

// rebuild redeploys the server's node with a new image.
func (s *Server) rebuild(c echo.Context, v fsm.Server, raw json.RawMessage, admin bool) error {
	var r struct {
		ImageRef          string            `json:"imageRef"`
		Name              *string           `json:"name"`
		AdminPass         string            `json:"adminPass"`
		Metadata          map[string]string `json:"metadata"`
		PreserveEphemeral *bool             `json:"preserve_ephemeral"`
		DiskConfig        string            `json:"OS-DCF:diskConfig"`
	}
	if err := strictJSON(raw, &r); err != nil {
		return err
	}
	if r.ImageRef == "" {
		return badRequest("imageRef is required: the image to rebuild the server with")
	}
	if r.Name != nil || r.Metadata != nil {
		return badRequest("corral rebuilds with a new image only: rename the server with PUT /servers/{id}")
	}
	image, err := s.checkImageRef(c, r.ImageRef)
	if err != nil {
		return err
	}
	return s.requestAction(c, v, &fsm.RequestServerAction{ID: v.ID, Kind: fsm.ActionRebuild, ImageRef: image, Admin: admin}, true)
}

// lock and unlock a server; from 2.73 a lock may carry a reason.
func (s *Server) lock(c echo.Context, v fsm.Server, locked bool, raw json.RawMessage) error {
	cmd := &fsm.UpdateServer{ID: v.ID, Locked: &locked}
	if locked && string(raw) != "null" {
		var r struct {
			Reason *string `json:"locked_reason"`
		}
		if err := strictJSON(raw, &r); err != nil {
			return err
		}
		if r.Reason != nil {
			if !mvAtLeast(c, 2, 73) {
				return badRequest("locked_reason needs microversion 2.73")
			}
			cmd.LockedReason = *r.Reason
		}
	}
	if err := s.propose(c, cmd); err != nil {
		return actionConflict(err, v.ID)
	}
	return c.NoContent(http.StatusAccepted)
}

// updateServer is PUT /servers/{id}: a rename.
func (s *Server) updateServer(c echo.Context) error {
	var body struct {
		Server *struct {
			Name *string `json:"name"`
		} `json:"server"`
	}
	if err := bindStrict(c, &body); err != nil {
		return err
	}
	if body.Server == nil || body.Server.Name == nil {
		return badRequest(`the body must be {"server": {"name": ...}}: corral updates a server's name`)
	}
	name := *body.Server.Name
	if strings.TrimSpace(name) == "" || len(name) > 255 {
		return badRequest("server name must be 1 to 255 characters")
	}
	if err := s.readBarrier(c); err != nil {
		return err
	}
	v, err := s.visibleServer(c, c.Param("id"))
	if err != nil {
		return err
	}
	if v.Locked && callerOf(c).role != RoleAdmin {
		return echo.NewHTTPError(http.StatusConflict, fmt.Sprintf("Instance %s is locked", v.ID))
	}
	if err := s.propose(c, &fsm.UpdateServer{ID: v.ID, Name: &name}); err != nil {
		return actionConflict(err, v.ID)
	}
	cur, err := s.c.Store().Server(v.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"server": s.novaServerView(c, cur)})
}
