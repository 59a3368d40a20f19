package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/cluster"
)

func (s *Server) healthz(c echo.Context) error {
	return c.String(http.StatusOK, "ok\n")
}

// readyz prints one line per check, like Kubernetes: "[+]raft ok: ...".
func (s *Server) readyz(c echo.Context) error {
	var b strings.Builder
	ok := true
	for _, ch := range s.c.Ready() {
		if ch.OK {
			fmt.Fprintf(&b, "[+]%s ok: %s\n", ch.Name, ch.Info)
		} else {
			ok = false
			fmt.Fprintf(&b, "[-]%s failed: %s\n", ch.Name, ch.Info)
		}
	}
	if !ok {
		b.WriteString("readyz check failed\n")
		return c.String(http.StatusServiceUnavailable, b.String())
	}
	b.WriteString("readyz check passed\n")
	return c.String(http.StatusOK, b.String())
}

// MembersResponse is the body of GET /v1/cluster/members.
type MembersResponse struct {
	Members []cluster.Member `json:"members"`
}

func (s *Server) members(c echo.Context) error {
	return c.JSON(http.StatusOK, MembersResponse{Members: s.c.Members()})
}

func (s *Server) raftStatus(c echo.Context) error {
	return c.JSON(http.StatusOK, s.c.RaftStatus())
}

func (s *Server) leave(c echo.Context) error {
	if s.cfg.OnLeave == nil {
		return echo.NewHTTPError(http.StatusNotImplemented, "this peer cannot leave through the API")
	}
	go s.cfg.OnLeave()
	return c.JSON(http.StatusAccepted, map[string]string{"status": "leaving", "peer": s.c.Name()})
}
