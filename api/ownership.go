package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/fsm"
)

func (s *Server) drainHost(drained bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		name := c.Param("name")
		if _, err := s.c.Store().Host(name); err != nil {
			return err
		}
		if err := s.propose(c, &fsm.SetHostDrain{Name: name, Drained: drained}); err != nil {
			return err
		}
		return s.getHost(c)
	}
}

// forceDown marks a host down at once, for a host an operator knows is
// dead; the leader then reassigns its servers.
func (s *Server) forceDown(c echo.Context) error {
	name := c.Param("name")
	if _, err := s.c.Store().Host(name); err != nil {
		return err
	}
	if err := s.propose(c, &fsm.SetHostStatus{Name: name, Status: fsm.HostDown}); err != nil {
		return err
	}
	return s.getHost(c)
}

// OwnerView explains who owns a server and why.
type OwnerView struct {
	ServerID string `json:"server_id"`
	Host     string `json:"host"`
	Epoch    uint64 `json:"epoch"`
	Index    uint64 `json:"index"` // log index of the entry that set host and epoch
	Reason   string `json:"reason"`
	Since    string `json:"since"`
	HostUp   bool   `json:"host_up"`
	Status   string `json:"status"`
	Task     string `json:"task_state,omitempty"`
	Node     string `json:"node_uuid,omitempty"`
}

func (s *Server) ownerView(v fsm.Server) OwnerView {
	o := OwnerView{ServerID: v.ID, Host: v.Host, Epoch: v.Epoch, Index: v.EpochIndex, Reason: v.OwnerReason,
		Status: string(v.Status), Task: v.TaskState, Node: v.NodeUUID}
	if !v.OwnerSince.IsZero() {
		o.Since = v.OwnerSince.UTC().Format(novaTime)
	}
	if h, err := s.c.Store().Host(v.Host); err == nil {
		o.HostUp = h.Status == fsm.HostUp
	}
	return o
}

func (s *Server) serverOwner(c echo.Context) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	v, err := s.liveServer(c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"owner": s.ownerView(v)})
}

func (s *Server) moveServer(c echo.Context) error {
	var body struct {
		Host string `json:"host"`
	}
	if err := bindStrict(c, &body); err != nil {
		return err
	}
	if body.Host == "" {
		return badRequest(`the body must be {"host": "<target host>"}`)
	}
	if err := s.readBarrier(c); err != nil {
		return err
	}
	v, err := s.liveServer(c.Param("id"))
	if err != nil {
		return err
	}
	cmd := &fsm.ReassignServers{Reason: fsm.ReasonAdminMove,
		Moves: []fsm.Move{{ServerID: v.ID, FromHost: v.Host, FromEpoch: v.Epoch, ToHost: body.Host}}}
	if err := s.propose(c, cmd); err != nil {
		return err
	}
	v, err = s.c.Store().Server(v.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"owner": s.ownerView(v)})
}

// planRebalance is a dry run: what a host's death or drain would move now.
func (s *Server) planRebalance(c echo.Context) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	host := c.QueryParam("host")
	if host == "" {
		return badRequest("give ?host=NAME: the host whose death or drain to plan")
	}
	if _, err := s.c.Store().Host(host); err != nil {
		return err
	}
	moves := s.c.Store().PlanReassign(host)
	if moves == nil {
		moves = []fsm.Move{}
	}
	after := s.c.Store().HostLoad()
	for _, m := range moves {
		after[m.FromHost]--
		after[m.ToHost]++
	}
	return c.JSON(http.StatusOK, map[string]any{"host": host, "moves": moves, "servers_after": after})
}
