package fsm

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/corral-dev/corral/fsm/sched"
)

// ServerStatus is Nova's server status.
type ServerStatus string

// Server statuses.
const (
	StatusBuild   ServerStatus = "BUILD"
	StatusActive  ServerStatus = "ACTIVE"
	StatusDeleted ServerStatus = "DELETED"
	StatusError   ServerStatus = "ERROR"
)

// Task states (Nova's OS-EXT-STS:task_state).
const (
	TaskScheduling = "scheduling"
	TaskReserving  = "block_device_mapping" // Nova's name for the step before spawning
	TaskSpawning   = "spawning"
	TaskDeleting   = "deleting"
)

// Network is one requested network of a server.
type Network struct {
	UUID    string `json:"uuid,omitempty"`
	Port    string `json:"port,omitempty"`
	FixedIP string `json:"fixed_ip,omitempty"`
}

// Fault is Nova's server fault.
type Fault struct {
	Code    int       `json:"code"`
	Message string    `json:"message"`
	Created time.Time `json:"created"`
}

// Server is a Nova server. Its flavor is embedded, as Nova stores it in
// instance_extra, so later flavor changes do not alter it.
type Server struct {
	ID             string            `json:"id"`
	Name           string            `json:"name"`
	Status         ServerStatus      `json:"status"`
	TaskState      string            `json:"task_state,omitempty"`
	Flavor         Flavor            `json:"flavor"`
	ImageRef       string            `json:"image_ref"`
	Networks       []Network         `json:"networks,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	Host           string            `json:"host,omitempty"`        // owner compute host
	Epoch          uint64            `json:"epoch,omitempty"`       // owner epoch: grows with every change of owner
	EpochIndex     uint64            `json:"epoch_index,omitempty"` // log index of the entry that set Host and Epoch
	OwnerReason    string            `json:"owner_reason,omitempty"`
	OwnerSince     time.Time         `json:"owner_since,omitempty"`
	NodeUUID       string            `json:"node_uuid,omitempty"`
	AllocationUUID string            `json:"allocation_uuid,omitempty"`
	// Claim is the server's placement allocation; ClaimedNode the Ironic
	// node it claims (the node the owner asks Ironic for).
	Claim       map[string]map[string]int64 `json:"claim,omitempty"`
	ClaimedNode string                      `json:"claimed_node,omitempty"`
	Fault       *Fault                      `json:"fault,omitempty"`
	RequestID   string                      `json:"request_id,omitempty"`
	CreatedAt   time.Time                   `json:"created_at"`
	UpdatedAt   time.Time                   `json:"updated_at"`
	// ProjectID and UserID are who asked for the server (Keystone's
	// project and user ids; empty for servers created before corral
	// knew them, shown as ProjectOrAdmin).
	ProjectID string `json:"project_id,omitempty"`
	UserID    string `json:"user_id,omitempty"`
	// KeyName and KeyData are the key pair the server was booted with (a
	// copy: the pair may go later); UserData is Nova's base64 user_data.
	// All three reach the node through its config drive.
	KeyName  string `json:"key_name,omitempty"`
	KeyData  string `json:"key_data,omitempty"`
	UserData string `json:"user_data,omitempty"`
	// Action is the stop, start, reboot or rebuild the owner has to carry
	// out (TaskState says which); Locked servers take none but an admin's.
	Action       *ServerAction `json:"action,omitempty"`
	Locked       bool          `json:"locked,omitempty"`
	LockedReason string        `json:"locked_reason,omitempty"`
	// The fields of Nova's API that snapshot format 4 carries
	// (server_fields.go), written only by commands every live peer knows.
	// ReservationID and LaunchIndex are the boot request the server came
	// from (Nova's multiple create) and its place among the request's
	// servers; Description is nil for Nova's null; AccessIPv4 and
	// AccessIPv6 are "" for none; Tags are sorted and unique.
	ReservationID string   `json:"reservation_id,omitempty"`
	LaunchIndex   int      `json:"launch_index,omitempty"`
	Description   *string  `json:"description,omitempty"`
	AccessIPv4    string   `json:"access_ip_v4,omitempty"`
	AccessIPv6    string   `json:"access_ip_v6,omitempty"`
	Tags          []string `json:"tags,omitempty"`
	// AdminPass is the password a create or rebuild gave the server, for
	// its owner to write into the config drive (meta_data admin_pass, as
	// Nova's Ironic driver does). It is kept only until the owner reports
	// the deploy or rebuild done (clearAdminPass): no view shows it and
	// no JSON carries it; snapshot format 4 does while it is held.
	AdminPass string `json:"-"`
}

// MaxAdminPassLen bounds a server's admin password.
const MaxAdminPassLen = 255

// clearAdminPass forgets s's admin password once the request that
// delivers it to the node was sent: the build or rebuild is over.
func clearAdminPass(s *Server) {
	s.AdminPass = ""
}

// Hostname is the server's host name as Nova derives it from the name
// (its config drive and its view carry it): lower case letters, digits
// and '-', at most 63 characters; "server-ID" when nothing is left.
func (s Server) Hostname() string {
	var b strings.Builder
	for _, c := range strings.ToLower(s.Name) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
			b.WriteRune(c)
		case c == ' ', c == '_', c == '.':
			b.WriteByte('-')
		}
	}
	h := strings.Trim(b.String(), "-")
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-")
	}
	if h == "" {
		return "server-" + s.ID
	}
	return h
}

func cloneServer(s Server) Server {
	s.Flavor = cloneFlavor(s.Flavor)
	s.Claim = cloneClaim(s.Claim)
	s.Networks = slices.Clone(s.Networks)
	s.Metadata = maps.Clone(s.Metadata)
	s.Tags = slices.Clone(s.Tags)
	if s.Description != nil {
		d := *s.Description
		s.Description = &d
	}
	if s.Fault != nil {
		f := *s.Fault
		s.Fault = &f
	}
	if s.Action != nil {
		a := *s.Action
		if a.Intent != nil {
			in := *a.Intent
			a.Intent = &in
		}
		s.Action = &a
	}
	return s
}

// DefaultProject is the project and user of a server created without
// one: with static tokens every caller is the cluster's admin.
const DefaultProject = "admin"

// Project is the server's project, DefaultProject when it has none.
func (s Server) Project() string { return orAdmin(s.ProjectID) }

// User is the server's user, DefaultProject when it has none.
func (s Server) User() string { return orAdmin(s.UserID) }

func orAdmin(v string) string {
	if v == "" {
		return DefaultProject
	}
	return v
}

// Live reports whether the server still counts (not deleted).
func (s Server) Live() bool { return s.Status != StatusDeleted }

// CreateServer records a new server. The leader fills Host (the owner)
// with sched.Place before proposing; an empty Host after that means no
// host could take it and the server is recorded in ERROR.
type CreateServer struct {
	Meta
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	FlavorID string            `json:"flavor_id"`
	ImageRef string            `json:"image_ref"`
	Networks []Network         `json:"networks,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Host     string            `json:"host,omitempty"`
	// Claim is the placement allocation the leader chose (provider →
	// resource class → amount), written in the same entry as the server.
	Claim map[string]map[string]int64 `json:"claim,omitempty"`
	// NoValidHost says why scheduling found nothing (the server is then
	// recorded in ERROR).
	NoValidHost string `json:"no_valid_host,omitempty"`
	// Avoid are hosts the leader must not choose (dead to gossip).
	Avoid []string `json:"avoid,omitempty"`
	// starved: the leader's decision found no resource provider at all
	// (not part of the entry).
	starved bool
	// ProjectID and UserID are the caller's (empty: DefaultProject); the
	// placement claim is theirs too.
	ProjectID string `json:"project_id,omitempty"`
	UserID    string `json:"user_id,omitempty"`
	// KeyName names one of the user's key pairs (Apply copies its public
	// key into the server); UserData is base64, at most MaxUserDataLen.
	KeyName  string `json:"key_name,omitempty"`
	UserData string `json:"user_data,omitempty"`
	// Group is the server group the server joins (Nova's group scheduler
	// hint); the leader's choice of Host keeps to its policy.
	Group string `json:"group,omitempty"`
	// SecurityGroups are the Neutron security groups the boot asked for,
	// resolved by the API (empty: Neutron's default group of the
	// project), kept in the server's port record (ServerNet.Requested);
	// set only once every live peer knows them (server_secgroups.go).
	SecurityGroups []SecurityGroupRef `json:"security_groups,omitempty"`
}

// Type implements Command.
func (*CreateServer) Type() CommandType { return CmdCreateServer }

// SetServerTask is the owner's progress report, fenced by its epoch.
// Empty Status keeps the status; TaskState is always set; Fault, when not
// nil, becomes the server's fault.
type SetServerTask struct {
	Meta
	ID        string       `json:"id"`
	Host      string       `json:"host"`
	Epoch     uint64       `json:"epoch"`
	Status    ServerStatus `json:"status,omitempty"`
	TaskState string       `json:"task_state,omitempty"`
	Fault     *Fault       `json:"fault,omitempty"`
}

// Type implements Command.
func (*SetServerTask) Type() CommandType { return CmdSetServerTask }

// DeleteServer is a user's delete request; the owner carries it out.
type DeleteServer struct {
	Meta
	ID string `json:"id"`
}

// Type implements Command.
func (*DeleteServer) Type() CommandType { return CmdDeleteServer }

func init() {
	register[CreateServer](CmdCreateServer, "CreateServer", applyCreateServer)
	register[SetServerTask](CmdSetServerTask, "SetServerTask", applySetServerTask)
	register[DeleteServer](CmdDeleteServer, "DeleteServer", applyDeleteServer)
	registerRecord(RecordServer, recordSpec{name: "server", write: writeServerRecords, load: loadServerRecord})
}

// placementCandidates are the up hosts of the kind, with their load,
// less the avoided ones.
func placementCandidates(st *state, kind string, avoid ...string) []sched.Candidate {
	load := hostLoad(st)
	var out []sched.Candidate
	for _, name := range sortedKeys(st.hosts) {
		h := st.hosts[name]
		if h.Status == HostUp && h.Kind == kind && !h.Drained && !slices.Contains(avoid, name) {
			out = append(out, sched.Candidate{Name: name, Servers: load[name]})
		}
	}
	return out
}

// decided schedules the server (leader only, before proposing).
func (c *CreateServer) decided(st *state, avoid []string) (Command, []bool) {
	d := c.undecided(avoid)
	schedule(st, d)
	return d, []bool{d.starved}
}

// undecided is a copy of c without the leader's decisions, avoiding
// avoid when it is not empty.
func (c *CreateServer) undecided(avoid []string) *CreateServer {
	d := *c
	d.Host, d.Claim, d.NoValidHost, d.starved = "", nil, "", false
	d.Avoid = avoiding(c.Avoid, avoid)
	return &d
}

const maxServerNameLen = 255

func applyCreateServer(st *state, c *CreateServer) (any, error) {
	s, err := prepareServer(st, c)
	if err != nil {
		return nil, err
	}
	if err := st.checkCreateQuota(c, s.Flavor); err != nil { // quota_check.go
		return nil, err
	}
	if err := checkGroup(st, c, nil); err != nil { // server_group.go
		return nil, err
	}
	if s.Host != "" {
		// Every check is done: the claim is the last step that can fail,
		// and it writes nothing when it fails.
		if err := claim(st, c.ID, s.Project(), s.User(), c.Claim); err != nil {
			return nil, err
		}
		s.Claim = c.Claim
	}
	st.putServer(s)
	st.joinGroup(c.Group, c.ID)
	st.requestGroups(c.ID, c.SecurityGroups)
	return cloneServer(s), nil
}

// prepareServer checks c against st and returns the server it records,
// changing nothing: the placement claim (c.Claim, for a server with a
// Host) is the caller's to write before it stores the server.
func prepareServer(st *state, c *CreateServer) (Server, error) {
	if c.ID == "" || len(c.ID) > MaxFlavorIDLen {
		return Server{}, fmt.Errorf("%w: server id must be 1 to %d characters", ErrInvalid, MaxFlavorIDLen)
	}
	if err := checkServerText(c.Name, c.ImageRef, c.Metadata, c.Networks, c.Bounded); err != nil {
		return Server{}, err
	}
	if c.Bounded {
		if err := CheckName("server name", c.Name); err != nil {
			return Server{}, err
		}
	}
	if c.ImageRef == "" {
		return Server{}, fmt.Errorf("%w: imageRef is required: bare-metal servers boot from an image", ErrInvalid)
	}
	if c.Bounded && len(c.FlavorID) > MaxFlavorIDLen {
		return Server{}, fmt.Errorf("%w: flavor id is longer than %d characters: list flavors for valid flavorRef values", ErrInvalid, MaxFlavorIDLen)
	}
	if len(c.ProjectID) > maxServerNameLen || len(c.UserID) > maxServerNameLen {
		return Server{}, fmt.Errorf("%w: project and user ids must be at most %d characters", ErrInvalid, maxServerNameLen)
	}
	if _, dup := st.servers[c.ID]; dup {
		return Server{}, fmt.Errorf("%w: server %s already exists", ErrConflict, c.ID)
	}
	f, ok := st.flavors[c.FlavorID]
	if !ok {
		return Server{}, fmt.Errorf("%w: flavor %s does not exist: list flavors for valid flavorRef values", ErrInvalid, c.FlavorID)
	}
	if err := checkSecurityGroups("server "+c.ID, c.SecurityGroups); err != nil {
		return Server{}, err
	}
	keyData, err := bootKey(st, c)
	if err != nil {
		return Server{}, err
	}
	at := c.At.UTC()
	s := Server{ID: c.ID, Name: c.Name, Flavor: st.share.flavor(f), ImageRef: c.ImageRef,
		Networks: slices.Clone(c.Networks), Metadata: maps.Clone(c.Metadata), RequestID: c.RequestID,
		CreatedAt: at, UpdatedAt: at, ProjectID: c.ProjectID, UserID: c.UserID,
		KeyName: c.KeyName, KeyData: keyData, UserData: c.UserData}
	if c.Host == "" {
		msg := c.NoValidHost
		if msg == "" {
			msg = "No valid host was found. No compute host of kind ironic is up: check `corral host list`."
		}
		s.Status = StatusError
		s.Fault = &Fault{Code: 500, Created: at, Message: msg}
		return s, nil
	}
	h, ok := st.hosts[c.Host]
	if !ok || h.Status != HostUp {
		return Server{}, fmt.Errorf("%w: host %s chosen for server %s is no longer up; retry the request", ErrStaleDecision, c.Host, c.ID)
	}
	if h.Drained {
		return Server{}, fmt.Errorf("%w: host %s chosen for server %s is drained; retry the request", ErrStaleDecision, c.Host, c.ID)
	}
	// Providers in sorted order: the order decides which error a bad
	// claim gets, and Apply must answer the same on every peer.
	for _, prov := range sortedKeys(c.Claim) {
		if _, isNode := st.nodes[prov]; isNode {
			if h.Kind != KindIronic {
				return Server{}, fmt.Errorf("%w: host %s cannot serve Ironic node %s", ErrInvalid, c.Host, prov)
			}
			if s.ClaimedNode != "" {
				return Server{}, fmt.Errorf("%w: server %s claims two Ironic nodes (%s, %s): a server is one node", ErrInvalid, c.ID, s.ClaimedNode, prov)
			}
			s.ClaimedNode = prov
		} else if prov != HostProviderUUID(c.Host) {
			return Server{}, fmt.Errorf("%w: host %s cannot serve resource provider %s", ErrInvalid, c.Host, prov)
		}
	}
	s.Status, s.TaskState, s.Host, s.Epoch = StatusBuild, TaskScheduling, c.Host, 1
	s.EpochIndex, s.OwnerSince, s.OwnerReason = st.index, at, "placed at creation (fewest servers)"
	return s, nil
}

// fence checks that host at epoch still owns the server.
func fence(s Server, host string, epoch uint64) error {
	if s.Host != host || s.Epoch != epoch {
		return fmt.Errorf("%w: server %s is owned by %s at epoch %d, not by %s at epoch %d: stop acting on it",
			ErrFenced, s.ID, s.Host, s.Epoch, host, epoch)
	}
	return nil
}

func errServerNotFound(id string) error {
	return fmt.Errorf("%w: server %s does not exist", ErrNotFound, id)
}

func applySetServerTask(st *state, c *SetServerTask) (any, error) {
	s, ok := st.servers[c.ID]
	if !ok {
		return nil, errServerNotFound(c.ID)
	}
	if err := fence(s, c.Host, c.Epoch); err != nil {
		return nil, err
	}
	if s.Status == StatusDeleted {
		return nil, fmt.Errorf("%w: server %s is deleted", ErrConflict, c.ID)
	}
	switch c.Status {
	case "", StatusBuild, StatusError:
	case StatusActive:
		if s.NodeUUID == "" && st.hosts[s.Host].Kind != KindHypervisor {
			return nil, fmt.Errorf("%w: server %s cannot become ACTIVE without a reserved node", ErrConflict, c.ID)
		}
	case StatusDeleted:
		if s.NodeUUID != "" {
			return nil, fmt.Errorf("%w: server %s still holds node %s: release it before marking the server deleted", ErrConflict, c.ID, s.NodeUUID)
		}
	default:
		return nil, fmt.Errorf("%w: server status %q is unknown", ErrInvalid, c.Status)
	}
	at := c.At.UTC()
	if c.Status != "" {
		s.Status = c.Status
	}
	if s.Status == StatusDeleted || s.Status == StatusError && s.NodeUUID == "" {
		// Nothing holds the claimed resources any more.
		dropClaim(st, s.ID)
		s.Claim, s.ClaimedNode = nil, ""
	}
	s.TaskState = c.TaskState
	if s.Status != StatusBuild && s.Action == nil {
		clearAdminPass(&s) // the deploy was sent (or will never be)
	}
	if cur := st.servers[c.ID].TaskState; cur == TaskDeleting && s.Status != StatusDeleted {
		// A requested delete stays requested until the owner finishes it.
		s.TaskState = TaskDeleting
	}
	if c.Fault != nil {
		f := *c.Fault
		f.Created = at
		s.Fault = &f
	}
	s.UpdatedAt = at
	st.putServer(s)
	return cloneServer(s), nil
}

func applyDeleteServer(st *state, c *DeleteServer) (any, error) {
	s, ok := st.servers[c.ID]
	if !ok || s.Status == StatusDeleted {
		return nil, errServerNotFound(c.ID)
	}
	s.UpdatedAt = c.At.UTC()
	if s.Host == "" && s.NodeUUID == "" {
		// Never scheduled: nothing in Ironic to undo.
		s.Status, s.TaskState = StatusDeleted, ""
		dropClaim(st, s.ID)
	} else {
		s.TaskState = TaskDeleting
	}
	st.putServer(s)
	return cloneServer(s), nil
}

func writeServerRecords(st *state, emit func(v any) error) error {
	for _, id := range sortedKeys(st.servers) {
		if err := emit(st.servers[id]); err != nil {
			return err
		}
	}
	return nil
}

func loadServerRecord(st *state, body []byte) error {
	var s Server
	if err := json.Unmarshal(body, &s); err != nil {
		return err
	}
	return addLoadedServer(st, s)
}

func wrapNotFound(msg string) error { return fmt.Errorf("%w: %s", ErrNotFound, msg) }

func cloneClaim(c map[string]map[string]int64) map[string]map[string]int64 {
	if c == nil {
		return nil
	}
	out := make(map[string]map[string]int64, len(c))
	for k, v := range c {
		out[k] = maps.Clone(v)
	}
	return out
}

// Servers returns every server (deleted ones included), sorted by
// creation time, then ID.
func (s *Store) Servers() []Server {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Server, 0, len(s.st.servers))
	for _, v := range s.st.servers {
		out = append(out, cloneServer(v))
	}
	slices.SortFunc(out, func(a, b Server) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Server returns one server (deleted ones too) or an error wrapping ErrNotFound.
func (s *Store) Server(id string) (Server, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.st.servers[id]
	if !ok {
		return Server{}, errServerNotFound(id)
	}
	return cloneServer(v), nil
}

// OwnedBy returns the live servers owned by host, sorted by ID.
func (s *Store) OwnedBy(host string) []Server {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Server
	s.st.eachOwned(host, func(id string) { out = append(out, cloneServer(s.st.servers[id])) })
	return out
}

// Ownership is what an owner's manager reads of each of its servers on
// every pass: enough to tell which need work and which changed owner
// epoch, without copying the whole server.
type Ownership struct {
	ID          string
	Status      ServerStatus
	TaskState   string
	Epoch       uint64
	OwnerSince  time.Time
	OwnerReason string
}

// Owned returns the live servers owned by host, sorted by ID, as
// Ownership: a cheap OwnedBy for a host that walks its servers after
// every burst of log entries.
func (s *Store) Owned(host string) []Ownership {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Ownership
	if t := s.st.idx.hosts[host]; t != nil {
		out = make([]Ownership, 0, t.Len())
	}
	s.st.eachOwned(host, func(id string) {
		v := s.st.servers[id]
		out = append(out, Ownership{ID: v.ID, Status: v.Status, TaskState: v.TaskState, Epoch: v.Epoch,
			OwnerSince: v.OwnerSince, OwnerReason: v.OwnerReason})
	})
	return out
}
