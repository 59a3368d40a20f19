package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/fsm"
)

// MigrationRequest selects servers for the Ironic flavor migration, or
// (with ServerIDs) migrates one batch.
type MigrationRequest struct {
	ResourceClass string   `json:"resource_class"` // Ironic's class (baremetal-gold) or Placement's (CUSTOM_BAREMETAL_GOLD)
	All           bool     `json:"all,omitempty"`
	Host          string   `json:"host,omitempty"`
	Node          string   `json:"node,omitempty"`
	ServerIDs     []string `json:"server_ids,omitempty"`
}

// MigrationServer is one bare-metal server in scope.
type MigrationServer struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Host     string `json:"host"`
	Node     string `json:"node"`
	Migrated bool   `json:"migrated"`
}

func (s *Server) flavorMigration(c echo.Context) error {
	var req MigrationRequest
	if err := bindStrict(c, &req); err != nil {
		return err
	}
	rc := fsm.NormalizeResourceClass(req.ResourceClass)
	switch {
	case rc == "":
		return badRequest("resource_class is required (the Ironic resource class of the nodes, e.g. baremetal-gold)")
	case len(req.ServerIDs) > 0:
		before := map[string]bool{}
		for _, id := range req.ServerIDs {
			if v, err := s.c.Store().Server(id); err == nil {
				before[id] = v.Migrated(rc)
			}
		}
		if err := s.propose(c, &fsm.MigrateFlavors{ResourceClass: rc, ServerIDs: req.ServerIDs}); err != nil {
			return err
		}
		// Count what this batch changed (the entry skips servers already
		// migrated, by an earlier or a concurrent run).
		migrated := 0
		for _, id := range req.ServerIDs {
			if v, err := s.c.Store().Server(id); err == nil && v.Migrated(rc) && !before[id] {
				migrated++
			}
		}
		return c.JSON(http.StatusOK, map[string]any{"resource_class": rc, "migrated": migrated})
	case req.All == (req.Host != ""):
		return badRequest("give either all or host (and optionally node)")
	case req.Node != "" && req.Host == "":
		return badRequest("node needs host")
	}
	if err := s.readBarrier(c); err != nil {
		return err
	}
	st := s.c.Store()
	if req.Host != "" {
		if _, err := st.Host(req.Host); err != nil {
			return err
		}
	}
	if req.Node != "" {
		if _, err := st.Node(req.Node); err != nil {
			return err
		}
	}
	var out []MigrationServer
	perNode := map[string]int{}
	for _, v := range st.Servers() {
		node := v.ServerNode()
		if !v.Live() || node == "" || (req.Host != "" && v.Host != req.Host) || (req.Node != "" && node != req.Node) {
			continue
		}
		n, err := st.Node(node)
		if err != nil || fsm.NormalizeResourceClass(n.ResourceClass) != rc {
			continue
		}
		perNode[node]++
		if perNode[node] > 1 {
			return echo.NewHTTPError(http.StatusConflict, "more than one server is on Ironic node "+node+": fix that before migrating")
		}
		out = append(out, MigrationServer{ID: v.ID, Name: v.Name, Host: v.Host, Node: node, Migrated: v.Migrated(rc)})
	}
	if len(out) == 0 {
		return echo.NewHTTPError(http.StatusNotFound, "no bare-metal server on a node of class "+rc+" matches")
	}
	return c.JSON(http.StatusOK, map[string]any{"resource_class": rc, "servers": out})
}
