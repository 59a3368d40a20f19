package admin

import (
	"net/http"
	"sort"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/wire"
)

// ListNetworks is GET /v1/networks: every network servers are attached
// to, with its members.
func (h *Handlers) ListNetworks(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	st := h.st.Store()
	kinds := map[string]string{}
	for _, h := range st.Hosts() {
		kinds[h.Name] = h.Kind
	}
	byNet := map[string]*wire.NetworkView{}
	for _, v := range st.LiveServers() {
		if v.Host == "" {
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
				nv = &wire.NetworkView{ID: id, Segment: "l2:" + id}
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
			nv.Members = append(nv.Members, wire.NetworkMember{ServerID: v.ID, Name: v.Name, Host: v.Host, Kind: kind,
				Node: v.NodeUUID, VIF: vifs[i], VNICType: vnic})
		}
	}
	out := make([]wire.NetworkView, 0, len(byNet))
	for _, nv := range byNet {
		out = append(out, *nv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return c.JSON(http.StatusOK, wire.NetworksResponse{Networks: out})
}
