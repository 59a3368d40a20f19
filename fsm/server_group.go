package fsm

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/corral-dev/corral/fsm/sched"
)

// Server groups, as Nova's os-server-groups: a project's set of servers
// with a policy over the hosts that own them (fsm/sched's Group says what
// the policies mean for corral's hosts). A server joins its group when it
// is created with the group hint, and leaves it when it is DELETED (or
// purged); deleting the group leaves its members alone. Only while
// FeatureServerGroups is on.

// Limits of server groups.
const (
	maxGroupNameLen = 255
	// MaxServerGroupsPerProject bounds one project's groups (Nova's
	// server_groups quota defaults to 10; quotas apply below this).
	MaxServerGroupsPerProject = 1000
)

// ServerGroup is a server group.
type ServerGroup struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Policy    string `json:"policy"`
	ProjectID string `json:"project_id"`
	UserID    string `json:"user_id"`
	// MaxServerPerHost is anti-affinity's rule (2.64); 0: none (one per
	// host).
	MaxServerPerHost int       `json:"max_server_per_host,omitempty"`
	Members          []string  `json:"members,omitempty"` // server ids, in the order they joined
	CreatedAt        time.Time `json:"created_at"`
}

func cloneGroup(g ServerGroup) ServerGroup {
	g.Members = slices.Clone(g.Members)
	return g
}

// CreateServerGroup records a new server group; the API chooses its id.
type CreateServerGroup struct {
	Meta
	Group ServerGroup `json:"group"`
}

// Type implements Command.
func (*CreateServerGroup) Type() CommandType { return CmdCreateServerGroup }

// DeleteServerGroup removes a server group (its members stay).
type DeleteServerGroup struct {
	Meta
	ID string `json:"id"`
}

// Type implements Command.
func (*DeleteServerGroup) Type() CommandType { return CmdDeleteServerGroup }

func init() {
	register[CreateServerGroup](CmdCreateServerGroup, "CreateServerGroup", applyCreateServerGroup)
	register[DeleteServerGroup](CmdDeleteServerGroup, "DeleteServerGroup", applyDeleteServerGroup)
	registerRecord(RecordServerGroup, recordSpec{name: "server group", write: writeGroupRecords, load: loadGroupRecord})
}

// ValidPolicy reports whether policy is one of Nova's.
func ValidPolicy(policy string) bool {
	switch policy {
	case sched.PolicyAffinity, sched.PolicyAntiAffinity, sched.PolicySoftAffinity, sched.PolicySoftAntiAffinity:
		return true
	}
	return false
}

var errGroupsOff = fmt.Errorf("%w: server groups are off until every peer runs a corral that knows them: finish the upgrade", ErrConflict)

func applyCreateServerGroup(st *state, c *CreateServerGroup) (any, error) {
	g := c.Group
	switch {
	case !st.featureOn(FeatureServerGroups):
		return nil, errGroupsOff
	case g.ID == "" || len(g.ID) > MaxFlavorIDLen:
		return nil, fmt.Errorf("%w: a server group's id must be 1 to %d characters", ErrInvalid, MaxFlavorIDLen)
	case g.Name == "" || utf8.RuneCountInString(g.Name) > maxGroupNameLen:
		return nil, fmt.Errorf("%w: a server group's name must be 1 to %d characters", ErrInvalid, maxGroupNameLen)
	case !ValidPolicy(g.Policy):
		return nil, fmt.Errorf("%w: server group policy %q is unknown", ErrInvalid, g.Policy)
	case g.MaxServerPerHost < 0 || g.MaxServerPerHost > 0 && g.Policy != sched.PolicyAntiAffinity:
		return nil, fmt.Errorf("%w: max_server_per_host is a positive rule of the anti-affinity policy only", ErrInvalid)
	case g.ProjectID == "" || len(g.ProjectID) > maxServerNameLen || g.UserID == "" || len(g.UserID) > maxServerNameLen:
		return nil, fmt.Errorf("%w: a server group belongs to a project and a user (ids of 1 to %d characters)", ErrInvalid, maxServerNameLen)
	case len(g.Members) > 0:
		return nil, fmt.Errorf("%w: a new server group has no members: servers join it when they are created", ErrInvalid)
	}
	if _, dup := st.groups[g.ID]; dup {
		return nil, fmt.Errorf("%w: server group %s already exists", ErrConflict, g.ID)
	}
	n := 0
	for _, other := range st.groups {
		if other.ProjectID == g.ProjectID {
			n++
		}
	}
	if n >= MaxServerGroupsPerProject {
		return nil, fmt.Errorf("%w: project %s has %d server groups, the most corral keeps", ErrConflict, g.ProjectID, n)
	}
	if !st.quotaAllows(g.ProjectID, "", QuotaServerGroups, int64(n), 1) ||
		!st.quotaAllows(g.ProjectID, g.UserID, QuotaServerGroups, groupsOf(st, g.ProjectID, g.UserID), 1) {
		return nil, quotaExceeded("Quota exceeded, too many server groups.")
	}
	g.CreatedAt = c.At.UTC()
	st.groups[g.ID] = g
	return cloneGroup(g), nil
}

func applyDeleteServerGroup(st *state, c *DeleteServerGroup) (any, error) {
	g, ok := st.groups[c.ID]
	if !ok {
		return nil, errGroupNotFound(c.ID)
	}
	for _, id := range g.Members {
		delete(st.groupOf, id)
	}
	delete(st.groups, c.ID)
	return nil, nil
}

func errGroupNotFound(id string) error {
	return fmt.Errorf("%w: Instance group %s could not be found.", ErrNotFound, id)
}

// schedGroup is the group of a server being placed as the scheduler
// sees it: where its other live members are owned (nil for no group).
func schedGroup(st *state, groupID, serverID string) *sched.Group {
	g, ok := st.groups[groupID]
	if !ok {
		return nil
	}
	sg := &sched.Group{Policy: g.Policy, MaxPerHost: g.MaxServerPerHost, Members: map[string]int{}}
	for _, id := range g.Members {
		if s, ok := st.servers[id]; ok && id != serverID && s.Live() && s.Host != "" {
			sg.Members[s.Host]++
		}
	}
	return sg
}

// checkGroup refuses a new server's group hint that names no group, and
// a decision its group's hard policy no longer allows (a member placed in
// between): the leader decides again.
// pending counts, per host, the members of the group decided before c in
// the same boot request (not stored yet).
func checkGroup(st *state, c *CreateServer, pending map[string]int) error {
	if c.Group == "" {
		return nil
	}
	if !st.featureOn(FeatureServerGroups) {
		return errGroupsOff
	}
	g := schedGroup(st, c.Group, c.ID)
	if g == nil {
		return fmt.Errorf("%w: Invalid server group: instance group %s could not be found", ErrInvalid, c.Group)
	}
	queued := 0
	for h, n := range pending {
		g.Members[h] += n
		queued += n
	}
	if in := st.groups[c.Group]; !st.quotaAllows(c.ProjectID, c.UserID, QuotaServerGroupMembers, int64(len(in.Members)+queued), 1) {
		return quotaExceeded("Quota exceeded, too many servers in group")
	}
	if c.Host != "" && !g.Allows(c.Host) {
		return fmt.Errorf("%w: host %s chosen for server %s breaks the %s policy of its group %s; retry the request",
			ErrStaleDecision, c.Host, c.ID, g.Policy, c.Group)
	}
	return nil
}

// joinGroup makes the server a member of its group (checked).
func (st *state) joinGroup(groupID, serverID string) {
	if groupID == "" {
		return
	}
	g := cloneGroup(st.groups[groupID])
	g.Members = append(g.Members, serverID)
	st.groups[groupID] = g
	st.groupOf[serverID] = groupID
}

// leaveGroup takes the server out of its group, if any.
func (st *state) leaveGroup(serverID string) {
	gid, ok := st.groupOf[serverID]
	if !ok {
		return
	}
	delete(st.groupOf, serverID)
	g, ok := st.groups[gid]
	if !ok {
		return
	}
	g = cloneGroup(g)
	g.Members = slices.DeleteFunc(g.Members, func(id string) bool { return id == serverID })
	st.groups[gid] = g
}

// ServerGroups returns every server group, by id.
func (s *Store) ServerGroups() []ServerGroup {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]ServerGroup, 0, len(s.st.groups))
	for _, id := range sortedKeys(s.st.groups) {
		out = append(out, cloneGroup(s.st.groups[id]))
	}
	return out
}

// ServerGroup returns one server group, or an error wrapping ErrNotFound.
func (s *Store) ServerGroup(id string) (ServerGroup, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	g, ok := s.st.groups[id]
	if !ok {
		return ServerGroup{}, errGroupNotFound(id)
	}
	return cloneGroup(g), nil
}

// GroupOf returns the id of the server's group ("" for none).
func (s *Store) GroupOf(serverID string) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.groupOf[serverID]
}

func writeGroupRecords(st *state, emit func(v any) error) error {
	for _, id := range sortedKeys(st.groups) {
		if err := emit(st.groups[id]); err != nil {
			return err
		}
	}
	return nil
}

func loadGroupRecord(st *state, body []byte) error {
	var g ServerGroup
	if err := json.Unmarshal(body, &g); err != nil {
		return err
	}
	if g.ID == "" {
		return fmt.Errorf("server group record has no id")
	}
	if _, dup := st.groups[g.ID]; dup {
		return fmt.Errorf("server group %s appears twice", g.ID)
	}
	for _, id := range g.Members {
		if other, taken := st.groupOf[id]; taken {
			return fmt.Errorf("server %s is a member of both %s and %s", id, other, g.ID)
		}
		st.groupOf[id] = g.ID
	}
	st.groups[g.ID] = g
	return nil
}

// groupsOf counts the server groups of a project, or of a user in it when
// user is not empty (the server_groups quota's usage, as Nova counts it).
func groupsOf(st *state, project, user string) int64 {
	var n int64
	for _, g := range st.groups {
		if g.ProjectID == project && (user == "" || g.UserID == user) {
			n++
		}
	}
	return n
}

func init() {
	registerQuotaCounter(func(st *state, project, user string, inUse QuotaLimits) {
		inUse[QuotaServerGroups] = groupsOf(st, project, user)
	})
}
