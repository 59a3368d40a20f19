package admin

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/wire"
)

// Members is GET /v1/cluster/members.
func (h *Handlers) Members(c echo.Context) error {
	ms := h.st.Cluster.Members()
	var out []wire.Member
	if ms != nil {
		out = make([]wire.Member, 0, len(ms))
	}
	for _, m := range ms {
		out = append(out, memberOf(m))
	}
	return c.JSON(http.StatusOK, wire.MembersResponse{Members: out})
}

// RaftStatus is GET /v1/cluster/raft.
func (h *Handlers) RaftStatus(c echo.Context) error {
	return c.JSON(http.StatusOK, raftStatus(h.st.Cluster.RaftStatus()))
}

// Leave is POST /v1/agent/leave: the peer leaves raft and gossip cleanly
// and exits.
func (h *Handlers) Leave(c echo.Context) error {
	if h.onLeave == nil {
		return echo.NewHTTPError(http.StatusNotImplemented, "this peer cannot leave through the API")
	}
	go h.onLeave()
	return c.JSON(http.StatusAccepted, wire.LeaveResponse{Status: "leaving", Peer: h.st.Cluster.Name()})
}
