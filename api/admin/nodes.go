package admin

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/wire"
)

// ListNodes is GET /v1/nodes: the Ironic nodes as the cluster mirrors them.
func (h *Handlers) ListNodes(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	st := h.st.Store()
	nodes := st.Nodes()
	out := make([]wire.NodeView, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, nodeView(n, st.ReservedBy(n.UUID)))
	}
	return c.JSON(http.StatusOK, wire.NodesResponse{Nodes: out})
}

// ListReservations is GET /v1/reservations: the committed node
// reservations.
func (h *Handlers) ListReservations(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	rs := h.st.Store().Reservations()
	var out []wire.Reservation
	if rs != nil {
		out = make([]wire.Reservation, 0, len(rs))
	}
	for _, r := range rs {
		out = append(out, reservation(r))
	}
	return c.JSON(http.StatusOK, wire.ReservationsResponse{Reservations: out})
}
