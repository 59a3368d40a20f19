package fsm

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// HostStatus is a host's membership status as decided by the leader.
type HostStatus string

// Host statuses.
const (
	HostUp   HostStatus = "up"
	HostDown HostStatus = "down"
	HostLeft HostStatus = "left"
)

// Valid reports whether s is one of the known statuses.
func (s HostStatus) Valid() bool {
	switch s {
	case HostUp, HostDown, HostLeft:
		return true
	}
	return false
}

// Host kinds.
const (
	KindIronic     = "ironic"
	KindHypervisor = "hypervisor"
)

// Host is a corral peer as seen by gossip and recorded by the leader.
type Host struct {
	Name       string     `json:"name"`
	RaftAddr   string     `json:"raft_address"`
	APIAddr    string     `json:"api_address"`
	GossipAddr string     `json:"gossip_address"`
	Kind       string     `json:"kind"`
	Status     HostStatus `json:"status"`
	JoinedAt   time.Time  `json:"joined_at"`
	ChangedAt  time.Time  `json:"changed_at"`
	// Drained hosts get no new servers, and the leader moves theirs away.
	Drained bool `json:"drained,omitempty"`
	// DrainReason is why the host was drained, as the operator said.
	DrainReason string `json:"drain_reason,omitempty"`
}

// RegisterHost adds a host or updates its addresses and kind, and marks it up.
type RegisterHost struct {
	Meta
	Name       string `json:"name"`
	RaftAddr   string `json:"raft_address"`
	APIAddr    string `json:"api_address"`
	GossipAddr string `json:"gossip_address"`
	Kind       string `json:"kind"` // KindIronic (default when empty) or KindHypervisor
}

// Type implements Command.
func (*RegisterHost) Type() CommandType { return CmdRegisterHost }

// SetHostStatus changes the status of a registered host.
type SetHostStatus struct {
	Meta
	Name   string     `json:"name"`
	Status HostStatus `json:"status"`
}

// Type implements Command.
func (*SetHostStatus) Type() CommandType { return CmdSetHostStatus }

func init() {
	register[RegisterHost](CmdRegisterHost, "RegisterHost", applyRegisterHost)
	register[SetHostStatus](CmdSetHostStatus, "SetHostStatus", applySetHostStatus)
	registerRecord(RecordHost, recordSpec{
		name:  "host",
		write: writeHostRecords,
		load:  loadHostRecord,
	})
}

const maxHostNameLen = 253

// ValidateHostName checks that name is hostname-like: 1 to 253 letters,
// digits, '.', '-' or '_', starting with a letter or digit.
func ValidateHostName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: host name is empty: set the node name of the peer", ErrInvalid)
	}
	if len(name) > maxHostNameLen {
		return fmt.Errorf("%w: host name is %d characters long: use at most %d", ErrInvalid, len(name), maxHostNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if i == 0 && !alnum {
			return fmt.Errorf("%w: host name %q must start with a letter or digit", ErrInvalid, name)
		}
		if !alnum && c != '.' && c != '-' && c != '_' {
			return fmt.Errorf("%w: host name %q contains %q: use only letters, digits, '.', '-' and '_'", ErrInvalid, name, c)
		}
	}
	return nil
}

// normalizeKind maps the empty kind to KindIronic and rejects unknown kinds.
func normalizeKind(kind string) (string, error) {
	switch kind {
	case "":
		return KindIronic, nil
	case KindIronic, KindHypervisor:
		return kind, nil
	}
	return "", fmt.Errorf("%w: host kind %q is unknown: use %q or %q", ErrInvalid, kind, KindIronic, KindHypervisor)
}

func applyRegisterHost(st *state, c *RegisterHost) (any, error) {
	if err := ValidateHostName(c.Name); err != nil {
		return nil, err
	}
	kind, err := normalizeKind(c.Kind)
	if err != nil {
		return nil, err
	}
	at := c.At.UTC()
	h, exists := st.hosts[c.Name]
	if !exists {
		h = Host{
			Name:       c.Name,
			RaftAddr:   c.RaftAddr,
			APIAddr:    c.APIAddr,
			GossipAddr: c.GossipAddr,
			Kind:       kind,
			Status:     HostUp,
			JoinedAt:   at,
			ChangedAt:  at,
		}
		st.hosts[h.Name] = h
		return h, nil
	}
	changed := h.RaftAddr != c.RaftAddr || h.APIAddr != c.APIAddr ||
		h.GossipAddr != c.GossipAddr || h.Kind != kind || h.Status != HostUp
	if !changed {
		return h, nil
	}
	h.RaftAddr, h.APIAddr, h.GossipAddr, h.Kind = c.RaftAddr, c.APIAddr, c.GossipAddr, kind
	h.Status = HostUp
	h.ChangedAt = at
	st.hosts[h.Name] = h
	return h, nil
}

func applySetHostStatus(st *state, c *SetHostStatus) (any, error) {
	if !c.Status.Valid() {
		return nil, fmt.Errorf("%w: host status %q is unknown: use %q, %q or %q", ErrInvalid, c.Status, HostUp, HostDown, HostLeft)
	}
	h, ok := st.hosts[c.Name]
	if !ok {
		return nil, errHostNotFound(c.Name)
	}
	if h.Status == c.Status {
		return h, nil
	}
	h.Status = c.Status
	h.ChangedAt = c.At.UTC()
	st.hosts[h.Name] = h
	return h, nil
}

func errHostNotFound(name string) error {
	return fmt.Errorf("%w: host %q is not registered: list hosts to see the registered names", ErrNotFound, name)
}

func writeHostRecords(st *state, emit func(v any) error) error {
	for _, name := range sortedKeys(st.hosts) {
		if err := emit(st.hosts[name]); err != nil {
			return err
		}
	}
	return nil
}

func loadHostRecord(st *state, body []byte) error {
	var h Host
	if err := json.Unmarshal(body, &h); err != nil {
		return err
	}
	if h.Name == "" {
		return fmt.Errorf("host record has no name")
	}
	if _, dup := st.hosts[h.Name]; dup {
		return fmt.Errorf("host %q appears twice", h.Name)
	}
	st.hosts[h.Name] = h
	return nil
}

// Hosts returns every host, sorted by name.
func (s *Store) Hosts() []Host {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Host, 0, len(s.st.hosts))
	for _, h := range s.st.hosts {
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b Host) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Host returns the named host or an error wrapping ErrNotFound.
func (s *Store) Host(name string) (Host, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	h, ok := s.st.hosts[name]
	if !ok {
		return Host{}, errHostNotFound(name)
	}
	return h, nil
}
