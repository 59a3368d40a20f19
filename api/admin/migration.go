package admin

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// FlavorMigration is POST /v1/manage/ironic-flavor-migration: without
// server ids it selects the bare-metal servers in scope; with them it
// migrates that batch, in one log entry.
func (h *Handlers) FlavorMigration(c echo.Context) error {
	var req wire.MigrationRequest
	if err := core.BindStrict(c, &req); err != nil {
		return err
	}
	rc := fsm.NormalizeResourceClass(req.ResourceClass)
	switch {
	case rc == "":
		return core.BadRequest("resource_class is required (the Ironic resource class of the nodes, e.g. baremetal-gold)")
	case len(req.ServerIDs) > 0:
		before := map[string]bool{}
		for _, id := range req.ServerIDs {
			if v, err := h.st.Store().Server(id); err == nil {
				before[id] = v.Migrated(rc)
			}
		}
		if err := h.st.ProposeAndRead(c, &fsm.MigrateFlavors{ResourceClass: rc, ServerIDs: req.ServerIDs}); err != nil {
			return err
		}
		// Count what this batch changed (the entry skips servers already
		// migrated, by an earlier or a concurrent run).
		migrated := 0
		for _, id := range req.ServerIDs {
			if v, err := h.st.Store().Server(id); err == nil && v.Migrated(rc) && !before[id] {
				migrated++
			}
		}
		return c.JSON(http.StatusOK, wire.MigrationResult{ResourceClass: rc, Migrated: migrated})
	case req.All == (req.Host != ""):
		return core.BadRequest("give either all or host (and optionally node)")
	case req.Node != "" && req.Host == "":
		return core.BadRequest("node needs host")
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	st := h.st.Store()
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
	var out []wire.MigrationServer
	perNode := map[string]int{}
	for _, v := range st.LiveServers() {
		node := v.ServerNode()
		if node == "" || (req.Host != "" && v.Host != req.Host) || (req.Node != "" && node != req.Node) {
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
		out = append(out, wire.MigrationServer{ID: v.ID, Name: v.Name, Host: v.Host, Node: node, Migrated: v.Migrated(rc)})
	}
	if len(out) == 0 {
		return echo.NewHTTPError(http.StatusNotFound, "no bare-metal server on a node of class "+rc+" matches")
	}
	return c.JSON(http.StatusOK, wire.MigrationSelection{ResourceClass: rc, Servers: out})
}
