package fsm

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// The Neutron ports of a server (with [neutron] configured): which ports
// the owner created or took over for the server, with what a view shows
// of them (network name, fixed addresses, MAC), and the intent of the
// owner's last Neutron or Ironic VIF side effect. Every such side effect
// is preceded by SetPortIntent at the owner's epoch, so that a host that
// lost the server takes none; a port id cannot be known before Neutron
// creates it, so the intent to create one names the server and the
// network, and whoever resumes first lists the ports whose device_id is
// the server before creating another.
//
// Kept beside the servers (st.nets, snapshot record RecordServerPorts,
// written only while some server has ports or an intent, which only
// commands 56 to 58 write, used once every live peer knows them).

// Steps of a port intent.
const (
	PortStepCreate = "create" // create a port on NetworkID for the server
	PortStepBind   = "bind"   // take over the user's port PortID: device_id, owner, binding
	PortStepAttach = "attach" // attach PortID as a VIF of the server's node
	PortStepDetach = "detach" // detach PortID from the server's node
	PortStepDelete = "delete" // delete PortID (a port corral created)
	PortStepUnbind = "unbind" // give the user's port PortID back: device and binding emptied
	// PortStepSecurityGroups (server_secgroups.go): change the security
	// groups of PortID.
)

var portSteps = []string{PortStepCreate, PortStepBind, PortStepAttach, PortStepDetach, PortStepDelete, PortStepUnbind, PortStepSecurityGroups}

// Limits of a server's ports.
const (
	MaxServerPorts  = 16 // ports per server
	MaxPortIPs      = 8  // fixed addresses per port
	maxPortFieldLen = 255
)

// PortIP is one fixed address of a port.
type PortIP struct {
	Address string `json:"address"`
	Version int    `json:"version"` // 4 or 6
}

// ServerPort is one Neutron port of a server.
type ServerPort struct {
	ID          string `json:"id"`
	NetworkID   string `json:"network_id"`
	NetworkName string `json:"network_name,omitempty"`
	MAC         string `json:"mac,omitempty"`
	// FixedIPs are the port's addresses when it was recorded.
	FixedIPs []PortIP `json:"fixed_ips,omitempty"`
	// User: the user passed the port in; a delete unbinds and keeps it
	// instead of deleting it.
	User bool `json:"user,omitempty"`
	// SecurityGroups are the port's security groups, as Neutron had them
	// when recorded (server_secgroups.go); GroupsKnown says they were
	// recorded (a port recorded by an older version has none known).
	SecurityGroups []SecurityGroupRef `json:"security_groups,omitempty"`
	GroupsKnown    bool               `json:"groups_known,omitempty"`
}

// PortIntent is the Neutron or VIF side effect an owner said it was about
// to take, at its epoch.
type PortIntent struct {
	Host      string    `json:"host"`
	Epoch     uint64    `json:"epoch"`
	Step      string    `json:"step"`
	NetworkID string    `json:"network_id,omitempty"`
	PortID    string    `json:"port_id,omitempty"`
	At        time.Time `json:"at"`
}

// ServerNet is what the state keeps of a server's ports.
type ServerNet struct {
	Ports  []ServerPort `json:"ports,omitempty"`
	Intent *PortIntent  `json:"intent,omitempty"`
	// Interface is the server's last os-interface request
	// (server_interfaces.go).
	Interface *InterfaceRequest `json:"interface,omitempty"`
	// SecurityGroup is the server's last security group request, and
	// Requested the groups its boot asked for (server_secgroups.go).
	SecurityGroup *SecurityGroupRequest `json:"security_group,omitempty"`
	Requested     []SecurityGroupRef    `json:"requested_security_groups,omitempty"`
}

func (n ServerNet) clone() ServerNet {
	n.Ports = slices.Clone(n.Ports)
	for i := range n.Ports {
		n.Ports[i].FixedIPs = slices.Clone(n.Ports[i].FixedIPs)
		n.Ports[i].SecurityGroups = slices.Clone(n.Ports[i].SecurityGroups)
	}
	if n.Intent != nil {
		in := *n.Intent
		n.Intent = &in
	}
	if n.Interface != nil {
		r := *n.Interface
		r.Had = slices.Clone(r.Had)
		n.Interface = &r
	}
	if n.SecurityGroup != nil {
		r := *n.SecurityGroup
		n.SecurityGroup = &r
	}
	n.Requested = slices.Clone(n.Requested)
	return n
}

// Port returns the recorded port id, if any.
func (n ServerNet) Port(id string) (ServerPort, bool) {
	for _, p := range n.Ports {
		if p.ID == id {
			return p, true
		}
	}
	return ServerPort{}, false
}

// SetPortIntent is an owner's intent to take one Neutron or Ironic VIF
// side effect for the server (Step, one of the PortStep constants, on
// NetworkID for a create, on PortID otherwise). Refused when the sender
// no longer owns the server at Epoch.
type SetPortIntent struct {
	Meta
	ID        string `json:"id"`
	Host      string `json:"host"`
	Epoch     uint64 `json:"epoch"`
	Step      string `json:"step"`
	NetworkID string `json:"network_id,omitempty"`
	PortID    string `json:"port_id,omitempty"`
}

// Type implements Command.
func (*SetPortIntent) Type() CommandType { return CmdSetPortIntent }

// RecordServerPort records a port the owner created or took over for the
// server (replacing the record of the same port id). It clears a pending
// intent to create a port on its network, or to take it over: a create
// intent still in the log is one whose port may exist unrecorded.
type RecordServerPort struct {
	Meta
	ID    string     `json:"id"`
	Host  string     `json:"host"`
	Epoch uint64     `json:"epoch"`
	Port  ServerPort `json:"port"`
}

// Type implements Command.
func (*RecordServerPort) Type() CommandType { return CmdRecordServerPort }

// ForgetServerPort removes a port from the server's record once the owner
// deleted it or gave it back. A port not recorded is no error.
type ForgetServerPort struct {
	Meta
	ID     string `json:"id"`
	Host   string `json:"host"`
	Epoch  uint64 `json:"epoch"`
	PortID string `json:"port_id"`
}

// Type implements Command.
func (*ForgetServerPort) Type() CommandType { return CmdForgetServerPort }

func init() {
	register[SetPortIntent](CmdSetPortIntent, "SetPortIntent", applySetPortIntent)
	register[RecordServerPort](CmdRecordServerPort, "RecordServerPort", applyRecordServerPort)
	register[ForgetServerPort](CmdForgetServerPort, "ForgetServerPort", applyForgetServerPort)
	registerRecord(RecordServerPorts, recordSpec{name: "server ports", write: writeServerPortsRecords, load: loadServerPortsRecord})
}

// ownedServer returns the live server id, fenced at host and epoch.
func ownedServer(st *state, id, host string, epoch uint64) (Server, error) {
	s, ok := st.servers[id]
	if !ok || s.Status == StatusDeleted {
		return Server{}, errServerNotFound(id)
	}
	return s, fence(s, host, epoch)
}

func checkPortField(name, v string, required bool) error {
	if required && v == "" {
		return fmt.Errorf("%w: a port's %s is required", ErrInvalid, name)
	}
	if len(v) > maxPortFieldLen {
		return fmt.Errorf("%w: a port's %s is %d characters, more than %d", ErrInvalid, name, len(v), maxPortFieldLen)
	}
	return nil
}

func applySetPortIntent(st *state, c *SetPortIntent) (any, error) {
	if _, err := ownedServer(st, c.ID, c.Host, c.Epoch); err != nil {
		return nil, err
	}
	if !slices.Contains(portSteps, c.Step) {
		return nil, fmt.Errorf("%w: port intent step %q is unknown", ErrInvalid, c.Step)
	}
	if err := checkPortField("network", c.NetworkID, c.Step == PortStepCreate); err != nil {
		return nil, err
	}
	if err := checkPortField("id", c.PortID, c.Step != PortStepCreate); err != nil {
		return nil, err
	}
	n := st.nets[c.ID].clone()
	n.Intent = &PortIntent{Host: c.Host, Epoch: c.Epoch, Step: c.Step, NetworkID: c.NetworkID, PortID: c.PortID, At: c.At.UTC()}
	st.nets[c.ID] = n
	return n.clone(), nil
}

func applyRecordServerPort(st *state, c *RecordServerPort) (any, error) {
	if _, err := ownedServer(st, c.ID, c.Host, c.Epoch); err != nil {
		return nil, err
	}
	p := c.Port
	for _, f := range []struct {
		name, v  string
		required bool
	}{{"id", p.ID, true}, {"network", p.NetworkID, true}, {"network name", p.NetworkName, false}, {"MAC", p.MAC, false}} {
		if err := checkPortField(f.name, f.v, f.required); err != nil {
			return nil, err
		}
	}
	if err := checkSecurityGroups("port "+p.ID, p.SecurityGroups); err != nil {
		return nil, err
	}
	if len(p.SecurityGroups) > 0 && !p.GroupsKnown {
		return nil, fmt.Errorf("%w: port %s has security groups recorded as unknown", ErrInvalid, p.ID)
	}
	if len(p.FixedIPs) > MaxPortIPs {
		return nil, fmt.Errorf("%w: a port has %d fixed addresses, more than %d", ErrInvalid, len(p.FixedIPs), MaxPortIPs)
	}
	for _, ip := range p.FixedIPs {
		a, err := netip.ParseAddr(ip.Address)
		if err != nil || a.Zone() != "" || (a.Is4() && ip.Version != 4) || (a.Is6() && ip.Version != 6) {
			return nil, fmt.Errorf("%w: %q is not an IPv%d address", ErrInvalid, ip.Address, ip.Version)
		}
	}
	n := st.nets[c.ID].clone()
	p.FixedIPs = slices.Clone(p.FixedIPs)
	p.SecurityGroups = slices.Clone(p.SecurityGroups)
	if i := slices.IndexFunc(n.Ports, func(q ServerPort) bool { return q.ID == p.ID }); i >= 0 {
		n.Ports[i] = p
	} else {
		if len(n.Ports) >= MaxServerPorts {
			return nil, fmt.Errorf("%w: server %s already has %d ports", ErrConflict, c.ID, MaxServerPorts)
		}
		n.Ports = append(n.Ports, p)
	}
	if in := n.Intent; in != nil && (in.Step == PortStepCreate && in.NetworkID == p.NetworkID ||
		in.Step == PortStepBind && in.PortID == p.ID) {
		// The create or take-over is done: nothing of it is pending.
		n.Intent = nil
	}
	st.nets[c.ID] = n
	return n.clone(), nil
}

func applyForgetServerPort(st *state, c *ForgetServerPort) (any, error) {
	if _, err := ownedServer(st, c.ID, c.Host, c.Epoch); err != nil {
		return nil, err
	}
	if err := checkPortField("id", c.PortID, true); err != nil {
		return nil, err
	}
	n, ok := st.nets[c.ID]
	if !ok {
		return ServerNet{}, nil
	}
	n = n.clone()
	n.Ports = slices.DeleteFunc(n.Ports, func(p ServerPort) bool { return p.ID == c.PortID })
	st.nets[c.ID] = n
	return n.clone(), nil
}

// ServerNet returns what the state keeps of the server's ports (zero when
// nothing).
func (s *Store) ServerNet(id string) ServerNet {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.nets[id].clone()
}

// serverPortsRecord is one RecordServerPorts record.
type serverPortsRecord struct {
	Server string `json:"server"`
	ServerNet
}

func writeServerPortsRecords(st *state, emit func(v any) error) error {
	for _, id := range sortedKeys(st.nets) {
		if err := emit(serverPortsRecord{Server: id, ServerNet: st.nets[id]}); err != nil {
			return err
		}
	}
	return nil
}

func loadServerPortsRecord(st *state, body []byte) error {
	var r serverPortsRecord
	if err := json.Unmarshal(body, &r); err != nil {
		return err
	}
	if r.Server == "" {
		return fmt.Errorf("server ports record has no server")
	}
	if _, dup := st.nets[r.Server]; dup {
		return fmt.Errorf("server ports of %s appear twice", r.Server)
	}
	st.nets[r.Server] = r.ServerNet
	return nil
}
