package historytest

import (
	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
)

// The servers, ports and network of the synthetic Neutron run.
const (
	IDC     = "cccccccc-0000-4000-8000-000000000003"
	IDD     = "dddddddd-0000-4000-8000-000000000004"
	Net     = "99999999-0000-4000-8000-0000000000aa"
	NetName = "provider"
	PortA   = "a0a0a0a0-0000-4000-8000-0000000000a1" // A's, deleted with A
	PortB   = "b0b0b0b0-0000-4000-8000-0000000000b1" // B's
	UserC   = "c0c0c0c0-0000-4000-8000-0000000000c1" // the user's, handed to C
	UserD   = "d0d0d0d0-0000-4000-8000-0000000000d1" // the user's, handed to D, given back
	UserX   = "e0e0e0e0-0000-4000-8000-0000000000e1" // the user's, handed to a boot that failed
	Project = "0123456789abcdef0123456789abcdef"
)

// NeutronRun is a synthetic run with -neutron: A (on the network) and D
// (the user's port UserD) were booted and deleted; B (on the network,
// port PortB) is ACTIVE on node X, C (the user's port UserC) ACTIVE on
// node Y; a boot handed UserX failed. Neutron holds PortB, UserC bound to
// their servers and UserD, UserX given back; the simulator's log holds
// each VIF attach and detach.
type NeutronRun struct {
	H   *Hist
	FS  history.FinalState
	Log client.EffectLog
}

// BootNets is a boot via n1 asking for nets, acknowledged with id (typ OK)
// or failed (typ Fail, id "", code 503).
func (h *Hist) BootNets(p int, name, id string, nets ...history.NetRequest) {
	h.Add(history.Op{Process: p, Type: history.Invoke, F: history.FBoot, Node: "n1", Value: history.OpValue{Name: name, Nets: nets}})
	if id == "" {
		h.Add(history.Op{Process: p, Type: history.Fail, F: history.FBoot, Node: "n1", Value: history.OpValue{Name: name}, Code: 503,
			Error: "HTTP 503: no leader"})
		return
	}
	h.Add(history.Op{Process: p, Type: history.OK, F: history.FBoot, Node: "n1", Value: history.OpValue{Name: name, ID: id}, Code: 202})
}

// OnNet is a request for the network, ByPort one for a user's port.
func OnNet() history.NetRequest { return history.NetRequest{Network: Net} }

// ByPort is a request for the user's port id.
func ByPort(id string) history.NetRequest { return history.NetRequest{Port: id} }

// Port is a port on the network with one address, bound to node (""
// none) for device ("" none) with the description desc.
func Port(id, device, node, ip, mac, desc string) client.NeutronPort {
	p := client.NeutronPort{ID: id, NetworkID: Net, ProjectID: Project, DeviceID: device, MAC: mac, Description: desc,
		FixedIPs: []client.NeutronFixedIP{{IPAddress: ip}}, HostID: node, VNICType: "baremetal", CreatedAt: "2026-12-01T17:00:05Z"}
	if device != "" {
		p.DeviceOwner = "compute:nova"
	}
	return p
}

// NewNeutronRun is the clean run described at NeutronRun.
func NewNeutronRun() *NeutronRun {
	h := &Hist{}
	h.BootNets(0, "a", IDA, OnNet())
	h.BootNets(2, "b", IDB, OnNet())
	h.BootNets(4, "c", IDC, ByPort(UserC))
	h.BootNets(6, "d", IDD, ByPort(UserD))
	h.BootNets(8, "x", "", ByPort(UserX))
	h.Read(1, IDA, "a", "ACTIVE", "")
	h.Read(1, IDB, "b", "ACTIVE", "")
	h.Read(1, IDC, "c", "ACTIVE", "")
	h.Del(0, IDA, "a", history.OK, 204)
	h.Del(6, IDD, "d", history.OK, 204)
	h.Read(1, IDA, "a", "", "")
	h.Read(1, IDD, "d", "", "")
	b := history.ServerState{ID: IDB, Name: "b", Status: "ACTIVE", Host: "n1", Node: NodeX}
	c := history.ServerState{ID: IDC, Name: "c", Status: "ACTIVE", Host: "n2", Node: NodeY}
	fs := history.FinalState{
		Servers: []history.ServerState{{ID: IDA, Name: "a", Status: "DELETED"}, b, c, {ID: IDD, Name: "d", Status: "DELETED"}},
		Views:   map[string][]history.ServerState{"n1": {b, c}, "n2": {b, c}, "n3": {b, c}},
		Owners: map[string]history.Owner{IDB: {ServerID: IDB, Host: "n1", HostUp: true, Status: "ACTIVE", Node: NodeX},
			IDC: {ServerID: IDC, Host: "n2", HostUp: true, Status: "ACTIVE", Node: NodeY}},
		Hosts: []history.Host{{Name: "n1", Status: "up"}, {Name: "n2", Status: "up"}, {Name: "n3", Status: "up"}},
		Reservations: []history.Reservation{{NodeUUID: NodeX, ServerID: IDB, Host: "n1", AllocationUUID: IDB},
			{NodeUUID: NodeY, ServerID: IDC, Host: "n2", AllocationUUID: IDC}},
		IronicNodes: []client.IronicNode{
			{UUID: NodeX, ProvisionState: "active", InstanceUUID: Ptr(IDB), AllocationUUID: Ptr(IDB)},
			{UUID: NodeY, ProvisionState: "active", InstanceUUID: Ptr(IDC), AllocationUUID: Ptr(IDC)},
		},
		Allocations: []client.IronicAllocation{{UUID: IDB, NodeUUID: Ptr(NodeX), State: "active"},
			{UUID: IDC, NodeUUID: Ptr(NodeY), State: "active"}},
		Running:  map[string]bool{"n1": true, "n2": true, "n3": true},
		Quiesced: true,
		Neutron: &history.NeutronState{URL: "http://127.0.0.1:9696", Network: NetName, NetworkID: Net, ProjectID: Project,
			Since: "2026-12-01T17:00:00Z",
			Ports: []client.NeutronPort{
				Port(PortB, IDB, NodeX, "192.0.2.11", "fa:16:3e:00:00:0b", "corral"),
				Port(UserC, IDC, NodeY, "192.0.2.12", "fa:16:3e:00:00:0c", "jepsen: a user's port for a boot"),
				Port(UserD, "", "", "192.0.2.13", "fa:16:3e:00:00:0d", "jepsen: a user's port for a boot"),
				Port(UserX, "", "", "192.0.2.14", "fa:16:3e:00:00:0e", "jepsen: a user's port for a boot"),
			},
			KnownServers: []string{IDA, IDB, IDC, IDD},
			UserPorts:    []string{UserC, UserD, UserX},
			Addresses: map[string][]history.Address{
				IDB: {{Network: NetName, IP: "192.0.2.11", MAC: "fa:16:3e:00:00:0b"}},
				IDC: {{Network: NetName, IP: "192.0.2.12", MAC: "fa:16:3e:00:00:0c"}},
			},
			Networks: map[string]string{Net: NetName},
			Reap:     history.ReapWait{GraceS: 10, WaitS: 30},
		},
	}
	r := &NeutronRun{H: h, FS: fs, Log: client.EffectLog{SideEffects: []client.SideEffect{}}}
	r.VIF(NodeY, "attach", PortA)
	r.VIF(NodeY, "detach", PortA)
	r.VIF(NodeX, "attach", UserD)
	r.VIF(NodeX, "detach", UserD)
	r.VIF(NodeX, "attach", PortB)
	r.VIF(NodeY, "attach", UserC)
	return r
}

// VIF logs a VIF attach or detach of port on node.
func (r *NeutronRun) VIF(node, target, port string) {
	n := int64(len(r.Log.SideEffects) + 1)
	r.Log.SideEffects = append(r.Log.SideEffects, client.SideEffect{Seq: n, Node: node, Kind: "vif", Target: target, VIF: port,
		Status: 204, Method: "POST", Path: "/v1/nodes/" + node + "/vifs"})
}

// PortOf points at the port id in the final state (nil when absent).
func (r *NeutronRun) PortOf(id string) *client.NeutronPort {
	for i := range r.FS.Neutron.Ports {
		if r.FS.Neutron.Ports[i].ID == id {
			return &r.FS.Neutron.Ports[i]
		}
	}
	return nil
}

// DropPort removes the port id from the final state.
func (r *NeutronRun) DropPort(id string) {
	ns := r.FS.Neutron
	for i := range ns.Ports {
		if ns.Ports[i].ID == id {
			ns.Ports = append(ns.Ports[:i:i], ns.Ports[i+1:]...)
			return
		}
	}
}
