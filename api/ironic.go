package api

import (
	"net/http"
	"sort"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/fsm"
)

// HostView is a host with the number of servers it owns.
type HostView struct {
	fsm.Host
	Servers int `json:"servers"`
}

// Capacity is the cluster-wide bare-metal capacity of one resource class:
// one figure for the whole cloud, not each host re-reporting everything.
type Capacity struct {
	ResourceClass string `json:"resource_class"` // Placement spelling, e.g. CUSTOM_BAREMETAL_GOLD
	IronicClass   string `json:"ironic_class"`   // as Ironic stores it
	Total         int    `json:"total"`
	Used          int    `json:"used"`        // reserved or holding an instance
	Free          int    `json:"free"`        // available for a new server now
	Unavailable   int    `json:"unavailable"` // maintenance, missing, not yet available
}

// HostsResponse is the body of GET /v1/hosts.
type HostsResponse struct {
	Hosts    []HostView `json:"hosts"`
	Capacity []Capacity `json:"capacity"`
}

// HostResponse is the body of GET /v1/hosts/{name}.
type HostResponse struct {
	Host HostView `json:"host"`
}

// NodeView is a mirrored Ironic node with the server reserving it.
type NodeView struct {
	fsm.Node
	ReservedBy string `json:"reserved_by,omitempty"`
}

func capacity(nodes []fsm.Node, reservedBy func(string) string) []Capacity {
	by := map[string]*Capacity{}
	for _, n := range nodes {
		c := by[n.ResourceClass]
		if c == nil {
			c = &Capacity{ResourceClass: fsm.NormalizeResourceClass(n.ResourceClass), IronicClass: n.ResourceClass}
			by[n.ResourceClass] = c
		}
		c.Total++
		switch {
		case reservedBy(n.UUID) != "" || n.InstanceUUID != "" || n.AllocationUUID != "":
			c.Used++
		case n.Available():
			c.Free++
		default:
			c.Unavailable++
		}
	}
	out := make([]Capacity, 0, len(by))
	for _, c := range by {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].IronicClass < out[j].IronicClass })
	return out
}

func (s *Server) hostViews() []HostView {
	load := s.c.Store().HostLoad()
	hosts := s.c.Store().Hosts()
	out := make([]HostView, 0, len(hosts))
	for _, h := range hosts {
		out = append(out, HostView{Host: h, Servers: load[h.Name]})
	}
	return out
}

func (s *Server) listHosts(c echo.Context) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	st := s.c.Store()
	return c.JSON(http.StatusOK, HostsResponse{Hosts: s.hostViews(), Capacity: capacity(st.Nodes(), st.ReservedBy)})
}

func (s *Server) getHost(c echo.Context) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	for _, h := range s.hostViews() {
		if h.Name == c.Param("name") {
			return c.JSON(http.StatusOK, HostResponse{Host: h})
		}
	}
	_, err := s.c.Store().Host(c.Param("name"))
	return err
}

func (s *Server) listNodes(c echo.Context) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	st := s.c.Store()
	nodes := st.Nodes()
	out := make([]NodeView, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, NodeView{Node: n, ReservedBy: st.ReservedBy(n.UUID)})
	}
	return c.JSON(http.StatusOK, map[string]any{"nodes": out})
}

func (s *Server) listReservations(c echo.Context) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"reservations": s.c.Store().Reservations()})
}
