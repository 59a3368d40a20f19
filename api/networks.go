package api

import (
	"net/http"
	"sort"

	"github.com/labstack/echo/v4"
)

// NetworkMember is one server port on a network.
type NetworkMember struct {
	ServerID string `json:"server_id"`
	Name     string `json:"name"`
	Host     string `json:"host,omitempty"`
	Kind     string `json:"kind"`           // host kind: ironic (bare metal) or hypervisor (VM)
	Node     string `json:"node,omitempty"` // Ironic node, for bare metal
	VIF      string `json:"vif"`
	VNICType string `json:"vnic_type"` // baremetal for a node's port, normal for a VM's
}

// NetworkView is one L2 segment: every server on the same network id
// shares it, bare metal (VNIC type baremetal) and VMs alike.
type NetworkView struct {
	ID      string          `json:"id"`
	Segment string          `json:"segment"`
	Members []NetworkMember `json:"members"`
}

func (s *Server) listNetworks(c echo.Context) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	st := s.c.Store()
	kinds := map[string]string{}
	for _, h := range st.Hosts() {
		kinds[h.Name] = h.Kind
	}
	byNet := map[string]*NetworkView{}
	for _, v := range st.Servers() {
		if !v.Live() || v.Host == "" {
			continue // a server no host took has no port anywhere
		}
		vifs := v.VIFs()
		for i, n := range v.Networks {
			id := n.UUID
			if id == "" {
				id = "port:" + n.Port
			}
			nv := byNet[id]
			if nv == nil {
				nv = &NetworkView{ID: id, Segment: "l2:" + id}
				byNet[id] = nv
			}
			kind := kinds[v.Host]
			if kind == "" {
				kind = "ironic"
			}
			vnic := "normal"
			if kind == "ironic" {
				vnic = "baremetal"
			}
			nv.Members = append(nv.Members, NetworkMember{ServerID: v.ID, Name: v.Name, Host: v.Host, Kind: kind,
				Node: v.NodeUUID, VIF: vifs[i], VNICType: vnic})
		}
	}
	out := make([]NetworkView, 0, len(byNet))
	for _, nv := range byNet {
		out = append(out, *nv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return c.JSON(http.StatusOK, map[string]any{"networks": out})
}
