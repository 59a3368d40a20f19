package nova

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/fsm"
)

// reservationAlphabet is what a reservation id is drawn from, as Nova's
// generate_uid draws it.
const reservationAlphabet = "0123456789abcdefghijklmnopqrstuvwxyz"

// newReservationID draws a reservation id as Nova's: "r-" and 8
// characters.
func newReservationID() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // the platform's entropy failed
	}
	for i := range b {
		b[i] = reservationAlphabet[int(b[i])%len(reservationAlphabet)]
	}
	return "r-" + string(b)
}

// CreateServer is POST /servers: one server, or with min_count and
// max_count (Nova's multiple create) several under one reservation id,
// each server's id drawn here. The answer is the first server, or with
// return_reservation_id the reservation id, as Nova's.
func (h *Handlers) CreateServer(c echo.Context) error {
	var body serverCreateRequest
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	in := body.Server
	if in == nil {
		return core.BadRequest(`the body must be {"server": {...}}`)
	}
	flavorRef, err := h.checkBoot(c, in)
	if err != nil {
		return err
	}
	minCount, maxCount, err := checkCounts(in.MinCount, in.MaxCount)
	if err != nil {
		return err
	}
	if minCount > fsm.MaxSetServers {
		return fmt.Errorf("%w: Quota exceeded for instances: Requested %d, but a request creates at most %d", core.ErrForbidden, minCount, fsm.MaxSetServers)
	}
	maxCount = min(maxCount, fsm.MaxSetServers) // as Nova lowers max_count to what its quota allows
	returnReservation := false
	if len(in.ReturnReservationID) > 0 {
		returnReservation, _ = novaBoolean("return_reservation_id", in.ReturnReservationID) // checked by checkBoot
	}
	flavorID := path.Base(strings.TrimRight(flavorRef, "/"))
	nets, form, err := parseNetworks(c, in.Networks) // boot.go
	if err != nil {
		return err
	}
	if maxCount > 1 {
		for _, n := range nets {
			if n.Port != "" {
				return core.BadRequest("Unable to launch multiple instances with a single configured port ID. Please launch your instance one by one with different ports.")
			}
			if n.FixedIP != "" {
				return core.BadRequest("max_count cannot be greater than 1 if an fixed_ip is specified.")
			}
		}
	}
	cl := core.CallerOf(c)
	if !cl.Static && cl.Project == "" {
		return fmt.Errorf("%w: a server belongs to a project: boot it with a project-scoped token", core.ErrForbidden)
	}
	// The flavor is checked when the entry applies, against the leader's
	// state. A private flavor's access and the image's minimums are
	// checked here, on this peer's replica after a read barrier
	// (bootState).
	if err := h.checkFlavorAccess(c, flavorID); err != nil { // flavor_access.go
		return err
	}
	image, im, err := h.checkImageRef(c, in.ImageRef) // images.go
	if err != nil {
		return err
	}
	if nets, err = h.checkNetworks(c, nets, form); err != nil { // networks.go
		return err
	}
	groups, err := h.bootSecurityGroups(c, in.SecurityGroups, cl.Project) // security_groups.go
	if err != nil {
		return err
	}
	var groupNames []string
	if h.networks != nil {
		for _, sg := range in.SecurityGroups {
			if sg.Name != nil && *sg.Name != "" {
				groupNames = append(groupNames, *sg.Name)
			}
		}
	}
	if im != nil {
		f, ok, err := h.bootFlavor(c, flavorID) // images.go
		if err != nil {
			return err
		}
		if ok {
			if err := checkImageFits(im, f); err != nil {
				return err
			}
		}
	}
	keyName := ""
	if in.KeyName != nil {
		keyName = *in.KeyName
	}
	pass, err := adminPassword(in.AdminPass)
	if err != nil {
		return err
	}
	diskConfig := "MANUAL"
	if in.DiskConfig != nil {
		diskConfig = *in.DiskConfig
	}
	group, err := h.bootGroup(c, body.SchedulerHints) // server_groups.go
	if err != nil {
		return err
	}
	tmpl := fsm.CreateServer{Group: group, Name: *in.Name, FlavorID: flavorID, ImageRef: image, Networks: nets, Metadata: in.Metadata,
		ProjectID: cl.Project, UserID: cl.User, KeyName: keyName, UserData: in.UserData, SecurityGroups: groups}
	fields := fsm.ServerFields{Description: in.Description, Tags: in.Tags}
	if in.AccessIPv4 != nil {
		fields.AccessIPv4 = *in.AccessIPv4
	}
	if in.AccessIPv6 != nil {
		fields.AccessIPv6 = *in.AccessIPv6
	}
	hasFields := fields.Description != nil || len(fields.Tags) > 0 || fields.AccessIPv4 != "" || fields.AccessIPv6 != ""
	if !h.known(fsm.CmdCreateServerSets) {
		switch {
		case maxCount > 1:
			return notYet("min_count and max_count above 1")
		case hasFields:
			return notYet("A server's description, tags and access addresses")
		case returnReservation:
			return notYet("return_reservation_id")
		}
		cmd := tmpl
		cmd.ID = uuid.NewString()
		if err := h.st.Propose(c, &cmd); err != nil {
			return err
		}
		return c.JSON(http.StatusAccepted, map[string]any{"server": createdServer(c, cmd.ID, diskConfig, "", groupNames)})
	}
	set := fsm.ServerSet{ReservationID: newReservationID(), MinCount: minCount, Server: tmpl, Fields: fields,
		Members: make([]fsm.SetMember, maxCount), AdminPass: pass}
	for i := range set.Members {
		set.Members[i].ID = uuid.NewString()
	}
	propose := h.st.Propose
	if len(set.Members) > 1 { // which of them were created is read here
		propose = h.st.ProposeAndRead
	}
	if err := propose(c, &fsm.CreateServerSets{Sets: []fsm.ServerSet{set}}); err != nil {
		return err
	}
	if returnReservation {
		return c.JSON(http.StatusAccepted, map[string]any{"reservation_id": set.ReservationID})
	}
	return c.JSON(http.StatusAccepted, map[string]any{"server": createdServer(c, h.firstServer(set), diskConfig, h.shownPassword(pass), groupNames)})
}

// ctxBootState marks a request whose read barrier bootState took.
const ctxBootState = "nova.boot_state"

// bootState is this peer's replica for a boot's checks (a private flavor's
// access, an image's minimums against the flavor, a server group), after
// a default read barrier taken once per request: the replica then holds
// every write acknowledged before the request, by any peer. Without it, a
// lagging replica could hold a flavor since deleted and created again
// private or smaller, and let the boot through: the leader's Apply checks
// neither.
func (h *Handlers) bootState(c echo.Context) (*fsm.Store, error) {
	if c.Get(ctxBootState) == nil {
		if err := h.st.Cluster.ReadBarrier(c.Request().Context(), cluster.Default); err != nil {
			return nil, err
		}
		c.Set(ctxBootState, true)
	}
	return h.st.Store(), nil
}

// firstServer is the id of the first server a boot request created: the
// first member, unless the leader dropped it (it placed at least
// min_count, not all). A set of one member committed without error
// created it.
func (h *Handlers) firstServer(set fsm.ServerSet) string {
	if len(set.Members) == 1 {
		return set.Members[0].ID
	}
	if _, err := h.st.Store().Server(set.Members[0].ID); err == nil {
		return set.Members[0].ID
	}
	for _, v := range h.st.Store().Servers() {
		if v.ReservationID == set.ReservationID && v.LaunchIndex == 0 {
			return v.ID
		}
	}
	return set.Members[0].ID
}
