package fsm

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/corral-dev/corral/fsm/placement"
)

// Boot requests as Nova's API takes them: each creates one server or, with
// min_count and max_count (Nova's multiple create), several, under one
// reservation id. The leader decides the servers of every request waiting
// together, as CreateServers decides single servers, and commits them in
// one CreateServerSets entry. A request's servers are all or nothing by
// its MinCount: the leader keeps the servers it placed when they are at
// least MinCount, and drops the others (Nova, too, creates fewer than
// max_count when its quota allows fewer); when fewer than MinCount fit,
// none of them gets a host and every one is recorded in ERROR, "No valid
// host was found. There are not enough hosts available.", as Nova's
// scheduler answers. Apply creates a request's servers together: when
// one of them is refused (a stale claim, a duplicate id), none is.

// MaxSetServers bounds the servers of one boot request (its max_count) and
// of one CreateServerSets entry.
const MaxSetServers = 1000

// notEnoughHosts is Nova's fault of the servers of a request that could not
// all be placed.
const notEnoughHosts = "No valid host was found. There are not enough hosts available."

// ServerSet is one boot request: a server, or the servers of a multiple
// create.
type ServerSet struct {
	// ReservationID is Nova's reservation_id, shared by the request's
	// servers (the API draws it: "r-" and 8 characters).
	ReservationID string `json:"reservation_id,omitempty"`
	// MinCount is the fewest of the request's servers it takes.
	MinCount int `json:"min_count"`
	// Server is what every server of the request is created from: name,
	// flavor, image, networks, metadata, key pair, user data, the
	// caller's project and user, and the request id in its Meta. It names
	// no server and carries no decision: those are the members'. When the
	// request creates several servers, each is named Name-1, Name-2, ... in
	// launch order, as Nova names them.
	Server CreateServer `json:"server"`
	// Fields are what the request sets beyond CreateServer's.
	Fields ServerFields `json:"fields"`
	// AdminPass is the password every server of the request is given
	// (Server.AdminPass; "" for none).
	AdminPass string `json:"admin_pass,omitempty"`
	// Members are the servers, in launch order: the API names their ids
	// (max_count of them), the leader records its decisions in them.
	Members []SetMember `json:"members"`
}

// SetMember is one server of a boot request and the leader's decision for
// it (see CreateServer).
type SetMember struct {
	ID          string                      `json:"id"`
	Host        string                      `json:"host,omitempty"`
	Claim       map[string]map[string]int64 `json:"claim,omitempty"`
	NoValidHost string                      `json:"no_valid_host,omitempty"`
}

// CreateServerSets is the boot requests the leader decided together,
// committed in one entry. Each request applies on its own, in order, at
// the entry's time, and gets its own answer (a Result whose Value is the
// request's servers, []Server); the entry as a whole never fails. Used
// once every live peer knows it.
type CreateServerSets struct {
	Meta
	Sets []ServerSet `json:"sets"`
}

// Type implements Command.
func (*CreateServerSets) Type() CommandType { return CmdCreateServerSets }

func init() {
	register[CreateServerSets](CmdCreateServerSets, "CreateServerSets", applyCreateServerSets)
}

func applyCreateServerSets(st *state, c *CreateServerSets) (any, error) {
	total := 0
	for _, set := range c.Sets {
		total += len(set.Members)
	}
	if len(c.Sets) == 0 || len(c.Sets) > MaxCreateBatch || total > MaxSetServers {
		return nil, fmt.Errorf("%w: a CreateServerSets entry carries 1 to %d requests and at most %d servers, got %d and %d",
			ErrInvalid, MaxCreateBatch, MaxSetServers, len(c.Sets), total)
	}
	out := make(BatchResult, len(c.Sets))
	for i := range c.Sets {
		v, err := applyServerSet(st, &c.Sets[i], c.At)
		out[i] = Result{Err: err}
		if err == nil {
			out[i].Value = v
		}
	}
	return out, nil
}

// memberName is the name of the i-th of n servers of a request named name.
func memberName(name string, i, n int) string {
	if n == 1 {
		return name
	}
	return name + "-" + strconv.Itoa(i+1)
}

// applyServerSet creates the servers of one request, all of them or, when
// one is refused, none.
func applyServerSet(st *state, set *ServerSet, at time.Time) ([]Server, error) {
	n, tmpl, members := len(set.Members), set.Server, set.Members
	placed := 0
	for _, m := range set.Members {
		if m.Host != "" {
			placed++
		}
	}
	switch {
	case n == 0 || n > MaxSetServers:
		return nil, fmt.Errorf("%w: a boot request creates 1 to %d servers, got %d", ErrInvalid, MaxSetServers, n)
	case set.MinCount < 1 || set.MinCount > n:
		return nil, fmt.Errorf("%w: a boot request of %d servers takes min_count 1 to %d, got %d", ErrInvalid, n, n, set.MinCount)
	case len(set.AdminPass) > MaxAdminPassLen:
		return nil, fmt.Errorf("%w: an admin password is at most %d bytes", ErrInvalid, MaxAdminPassLen)
	case len(set.ReservationID) > MaxReservationIDLen:
		return nil, fmt.Errorf("%w: a reservation id is at most %d characters", ErrInvalid, MaxReservationIDLen)
	case tmpl.ID != "" || tmpl.Host != "" || tmpl.Claim != nil || tmpl.NoValidHost != "":
		return nil, fmt.Errorf("%w: a boot request's server names no server and carries no decision: its members do", ErrInvalid)
	case len(tmpl.ImageRef) > MaxImageRefLen:
		return nil, fmt.Errorf("%w: imageRef must be at most %d characters", ErrInvalid, MaxImageRefLen)
	case placed != 0 && placed != n:
		return nil, fmt.Errorf("%w: a boot request's servers are placed all or none, got %d of %d", ErrInvalid, placed, n)
	case n > 1 && len(memberName(tmpl.Name, n-1, n)) > maxServerNameLen:
		return nil, fmt.Errorf("%w: server name %q with its index (-%d) must be at most %d characters", ErrInvalid, tmpl.Name, n, maxServerNameLen)
	}
	fields, err := set.Fields.check()
	if err != nil {
		return nil, err
	}
	if err := checkMetadata(st, orAdmin(tmpl.ProjectID), tmpl.Metadata, len(tmpl.Metadata)); err != nil {
		return nil, err
	}
	if f, ok := st.flavors[tmpl.FlavorID]; ok { // else prepareServer refuses it below
		project, user := orAdmin(tmpl.ProjectID), orAdmin(tmpl.UserID)
		// Nova's multiple create: all or nothing by min_count, and as many
		// up to max_count as the quotas allow (quota_check.go).
		fit, err := st.checkServerQuota(project, user, set.MinCount, n, f)
		if err != nil {
			return nil, err
		}
		members = members[:fit]
		n = fit
	}
	servers := make([]Server, n)
	claims := map[string]placement.ConsumerAllocations{}
	pending := map[string]int{} // the group's members of this request so far, by host
	seen := make(map[string]bool, n)
	for i, m := range members {
		if seen[m.ID] {
			return nil, fmt.Errorf("%w: server %s appears twice in one boot request", ErrConflict, m.ID)
		}
		seen[m.ID] = true
		c := tmpl
		c.At, c.ID, c.Name = at, m.ID, memberName(tmpl.Name, i, n)
		// Every peer that applies this command type holds text to the
		// bounds (text.go): they came in the same release.
		c.Bounded = true
		c.Host, c.Claim, c.NoValidHost = m.Host, m.Claim, m.NoValidHost
		s, err := prepareServer(st, &c)
		if err != nil {
			return nil, err
		}
		if err := checkGroup(st, &c, pending); err != nil { // server_group.go
			return nil, err
		}
		if c.Group != "" && s.Host != "" {
			pending[s.Host]++
		}
		s.ReservationID, s.LaunchIndex = set.ReservationID, i
		if s.Host != "" { // a server without a host is never deployed
			s.AdminPass = set.AdminPass
		}
		s.AccessIPv4, s.AccessIPv6, s.Tags = fields.AccessIPv4, fields.AccessIPv6, slices.Clone(fields.Tags)
		if fields.Description != nil {
			d := *fields.Description
			s.Description = &d
		}
		if s.Host != "" && len(m.Claim) > 0 {
			claims[m.ID] = placement.ConsumerAllocations{ProjectID: s.Project(), UserID: s.User(), Allocations: m.Claim}
			s.Claim = m.Claim
		}
		servers[i] = s
	}
	// Every check is done: the claims are the last step that can fail,
	// and they write nothing when one fails.
	if err := claimAll(st, claims); err != nil {
		return nil, err
	}
	out := make([]Server, n)
	for i, s := range servers {
		st.putServer(s)
		st.joinGroup(tmpl.Group, s.ID)
		st.requestGroups(s.ID, tmpl.SecurityGroups)
		out[i] = cloneServer(s)
	}
	return out, nil
}

// decided decides the requests together, in order: each server counts the
// claims and hosts of those decided before it (of its request and of the
// requests before it) as if they were applied, as CreateServers decides,
// and each request is kept whole or given up by its MinCount. It reports,
// per request, whether a server of it found no resource provider at all.
func (c *CreateServerSets) decided(st *state, avoid []string) (Command, []bool) {
	d := *c
	d.Sets = make([]ServerSet, len(c.Sets))
	starved := make([]bool, len(c.Sets))
	size := 0
	for _, set := range c.Sets {
		size += len(set.Members)
	}
	pending := newPendingClaims(size)
	for i := range c.Sets {
		d.Sets[i], starved[i] = c.Sets[i].decide(st, avoid, pending)
	}
	return &d, starved
}

// decide places the request's servers on top of pending: it keeps those
// placed when they are at least MinCount, and otherwise gives back their
// claims and records every server without a host (each with why it found
// none, or, when some were placed, that there were not enough).
func (set *ServerSet) decide(st *state, avoid []string, pending *pendingClaims) (ServerSet, bool) {
	out := *set
	tmpl := set.Server.undecided(avoid)
	out.Server = *tmpl
	members := make([]SetMember, len(set.Members))
	decided := make([]CreateServer, len(set.Members))
	placed, starved := 0, false
	for j, m := range set.Members {
		s := *tmpl
		s.ID = m.ID
		scheduleWith(st, &s, pending)
		pending.add(&s)
		decided[j] = s
		members[j] = SetMember{ID: m.ID, Host: s.Host, Claim: s.Claim, NoValidHost: s.NoValidHost}
		if s.Host != "" {
			placed++
		}
		starved = starved || s.starved
	}
	switch {
	case placed == len(members):
	case placed >= max(set.MinCount, 1):
		members = slices.DeleteFunc(members, func(m SetMember) bool { return m.Host == "" })
	default:
		for j := range members {
			if members[j].Host != "" {
				pending.remove(&decided[j])
				members[j].Host, members[j].Claim = "", nil
			}
			if placed > 0 {
				members[j].NoValidHost = notEnoughHosts
			}
		}
	}
	out.Members = members
	return out, starved
}
