package admin

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// ownerTime is the format of OwnerView.Since.
const ownerTime = "2006-01-02T15:04:05Z"

// ownerView explains who owns a server and why.
func (h *Handlers) ownerView(v fsm.Server) wire.OwnerView {
	o := wire.OwnerView{ServerID: v.ID, Host: v.Host, Epoch: v.Epoch, Index: v.EpochIndex, Reason: v.OwnerReason,
		Status: string(v.Status), Task: v.TaskState, Node: v.NodeUUID}
	if !v.OwnerSince.IsZero() {
		o.Since = v.OwnerSince.UTC().Format(ownerTime)
	}
	if h, err := h.st.Store().Host(v.Host); err == nil {
		o.HostUp = h.Status == fsm.HostUp
	}
	return o
}

// ServerOwner is GET /v1/servers/{id}/owner.
func (h *Handlers) ServerOwner(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	v, err := h.st.LiveServer(c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wire.OwnerResponse{Owner: h.ownerView(v)})
}

// MoveServer is POST /v1/servers/{id}/move: the server gets a new owner,
// the old one is fenced out by the raised epoch.
func (h *Handlers) MoveServer(c echo.Context) error {
	var body wire.MoveRequest
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	if body.Host == "" {
		return core.BadRequest(`the body must be {"host": "<target host>"}`)
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	v, err := h.st.LiveServer(c.Param("id"))
	if err != nil {
		return err
	}
	cmd := &fsm.ReassignServers{Reason: fsm.ReasonAdminMove,
		Moves: []fsm.Move{{ServerID: v.ID, FromHost: v.Host, FromEpoch: v.Epoch, ToHost: body.Host}}}
	if err := h.st.ProposeAndRead(c, cmd); err != nil {
		return err
	}
	v, err = h.st.Store().Server(v.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wire.OwnerResponse{Owner: h.ownerView(v)})
}

// PlanRebalance is GET /v1/plan/rebalance, a dry run: what a host's death or drain would move now.
func (h *Handlers) PlanRebalance(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	host := c.QueryParam("host")
	if host == "" {
		return core.BadRequest("give ?host=NAME: the host whose death or drain to plan")
	}
	if _, err := h.st.Store().Host(host); err != nil {
		return err
	}
	moves := make([]wire.Move, 0)
	after := h.st.Store().HostLoad()
	for _, m := range h.st.Store().PlanReassign(host) {
		moves = append(moves, move(m))
		after[m.FromHost]--
		after[m.ToHost]++
	}
	return c.JSON(http.StatusOK, wire.RebalancePlan{Host: host, Moves: moves, ServersAfter: after})
}
