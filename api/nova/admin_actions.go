package nova

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// resetStates are os-resetState's states, as Nova's schema names them,
// and the status each sets.
var resetStates = map[string]fsm.ServerStatus{"active": fsm.StatusActive, "error": fsm.StatusError}

// resetState is an admin's os-resetState (Nova's policy
// os_compute_api:os-admin-actions:reset_state, admin only): the server's
// status becomes ACTIVE or ERROR and its task state is cleared, at once
// (202). The owner's work in progress is not cancelled; what becomes of
// its outcome is fsm.ResetServerState's.
func (h *Handlers) resetState(c echo.Context, v fsm.Server, raw json.RawMessage) error {
	status, err := resetStateOf(raw)
	if err != nil {
		return err
	}
	if core.CallerOf(c).Role != core.RoleAdmin {
		return fmt.Errorf("%w: Policy doesn't allow os_compute_api:os-admin-actions:reset_state to be performed.", core.ErrForbidden)
	}
	if !h.known(fsm.CmdResetServerState) {
		return core.BadRequest("os-resetState cannot be taken until every peer of the cluster runs a version that knows it")
	}
	if err := h.st.Propose(c, &fsm.ResetServerState{ID: v.ID, Status: status}); err != nil {
		return actionConflict(err, v.ID)
	}
	return c.NoContent(http.StatusAccepted)
}

// resetStateOf reads os-resetState's argument as Nova's schema does: an
// object with only "state", one of resetStates.
func resetStateOf(raw json.RawMessage) (fsm.ServerStatus, error) {
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil || body == nil {
		return "", invalidInput(wire.ActionResetState, raw, "it is not of type 'object'")
	}
	var extra []string
	for k := range body {
		if k != "state" {
			extra = append(extra, fmt.Sprintf("'%s'", k))
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		verb := "was"
		if len(extra) > 1 {
			verb = "were"
		}
		return "", core.BadRequest("Additional properties are not allowed (%s %s unexpected)", strings.Join(extra, ", "), verb)
	}
	state, ok := body["state"]
	if !ok {
		return "", invalidInput(wire.ActionResetState, raw, "'state' is a required property")
	}
	var a wire.ResetStateAction
	if err := json.Unmarshal(state, &a.State); err != nil {
		return "", invalidInput("state", state, fmt.Sprintf("%s is not of type 'string'", state))
	}
	status, known := resetStates[a.State]
	if !known {
		return "", invalidInput("state", a.State, fmt.Sprintf("'%s' is not one of ['active', 'error']", a.State))
	}
	return status, nil
}
