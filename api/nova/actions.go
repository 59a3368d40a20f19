package nova

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
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

// actionConflict maps the fsm's refusal of an action to Nova's answer.
func actionConflict(err error, id string) error {
	switch {
	case errors.Is(err, fsm.ErrQuotaExceeded): // a kind of ErrConflict that Nova answers with 403
		return err
	case errors.Is(err, fsm.ErrNotFound):
		return core.ServerNotFound(id)
	case errors.Is(err, fsm.ErrConflict):
		msg := err.Error()
		if i := strings.Index(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		return echo.NewHTTPError(http.StatusConflict, msg)
	}
	return err
}

// ServerAction is POST /servers/{id}/action.
func (h *Handlers) ServerAction(c echo.Context) error {
	var body map[string]json.RawMessage
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	if len(body) != 1 {
		keys := make([]string, 0, len(body))
		for k := range body {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return core.BadRequest("the body must hold exactly one action, not %v", keys)
	}
	id := c.Param("id")
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	v, err := h.visibleServer(c, id)
	if err != nil {
		return err
	}
	admin := core.CallerOf(c).Role == core.RoleAdmin
	for name, raw := range body {
		switch name {
		case wire.ActionStop, wire.ActionStart:
			kind := fsm.ActionStop
			if name == wire.ActionStart {
				kind = fsm.ActionStart
			}
			return h.requestAction(c, v, &fsm.RequestServerAction{ID: v.ID, Kind: kind, Admin: admin}, false)
		case wire.ActionReboot:
			var r wire.RebootAction
			if err := strictJSON(raw, &r); err != nil {
				return err
			}
			kind := fsm.ActionReboot
			switch strings.ToUpper(r.Type) {
			case wire.RebootSoft:
			case wire.RebootHard:
				kind = fsm.ActionRebootHard
			default:
				return core.BadRequest("Invalid input for field/attribute type. Value: %s. %q is not one of ['HARD', 'Hard', 'hard', 'SOFT', 'Soft', 'soft']", r.Type, r.Type)
			}
			return h.requestAction(c, v, &fsm.RequestServerAction{ID: v.ID, Kind: kind, Admin: admin}, false)
		case wire.ActionRebuild:
			return h.rebuild(c, v, raw, admin)
		case wire.ActionLock, wire.ActionUnlock:
			return h.lock(c, v, name == wire.ActionLock, raw)
		case wire.ActionResetState:
			return h.resetState(c, v, raw) // admin_actions.go
		case "restore":
			return restore(v)
		case "addSecurityGroup", "removeSecurityGroup":
			if h.networks != nil {
				return h.securityGroupAction(c, v, name, raw) // security_groups.go
			}
		}
		return core.BadRequest("There is no such action: %s", name)
	}
	return nil
}

// strictJSON decodes an action's argument, rejecting unknown fields.
func strictJSON(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return core.BadRequest("malformed action: %v", err)
	}
	return nil
}

func (h *Handlers) requestAction(c echo.Context, v fsm.Server, cmd *fsm.RequestServerAction, show bool) error {
	propose := h.st.Propose
	if show { // the answer is the server as the action left it, read here
		propose = h.st.ProposeAndRead
	}
	if err := propose(c, cmd); err != nil {
		return actionConflict(err, v.ID)
	}
	if !show {
		return c.NoContent(http.StatusAccepted)
	}
	cur, err := h.st.Store().Server(v.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"server": h.serverView(c, serverRebuild, cur)})
}

// restore answers Nova's restore of a soft-deleted server: corral deletes
// servers at once, so no server is ever soft-deleted and the answer is
// Nova's 409 for a server in another state.
func restore(v fsm.Server) error {
	state, _ := vmStateOf(serverItem{v: v}).(string)
	if v.Status == fsm.StatusShutoff {
		state = "stopped"
	}
	return echo.NewHTTPError(http.StatusConflict, fmt.Sprintf("Cannot 'restore' instance %s while it is in vm_state %s", v.ID, state))
}

// lock and unlock a server; from 2.73 a lock may carry a reason.
func (h *Handlers) lock(c echo.Context, v fsm.Server, locked bool, raw json.RawMessage) error {
	cmd := &fsm.UpdateServer{ID: v.ID, Locked: &locked}
	if locked && string(raw) != "null" {
		var r wire.LockAction
		if err := strictJSON(raw, &r); err != nil {
			return err
		}
		if r.Reason != nil {
			if !mvAtLeast(c, 2, 73) {
				return core.BadRequest("locked_reason needs microversion 2.73")
			}
			if n := utf8.RuneCountInString(*r.Reason); n == 0 || n > maxNameLen {
				return invalidInput("locked_reason", *r.Reason, fmt.Sprintf("a reason is 1 to %d characters long", maxNameLen))
			}
			if err := fsm.CheckText("locked_reason", *r.Reason, maxNameLen, true); err != nil {
				return invalidInput("locked_reason", *r.Reason, "a reason is text without control characters")
			}
			cmd.LockedReason = *r.Reason
		}
	}
	if err := h.st.Propose(c, cmd); err != nil {
		return actionConflict(err, v.ID)
	}
	return c.NoContent(http.StatusAccepted)
}
