// Package neutrontest is an in-memory Neutron for the tests of the
// packages that give servers Neutron ports (neutron/serverports and the
// virt drivers): networks and ports as Neutron answers corral's service
// user, with Neutron's rules that the port steps meet (a MAC or a fixed
// address unique on its network, an address inside the network's subnets)
// and hooks that let a test act at a given call. It imports only the
// neutron package's types; it is for tests, nothing else imports it.
package neutrontest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/neutron"
)

// Neutron keeps networks and ports in memory.
type Neutron struct {
	mu       sync.Mutex
	networks map[string]neutron.Network
	cidrs    map[string]netip.Prefix // network → the prefix of its one subnet
	ports    map[string]neutron.Port
	groups   map[string]neutron.SecurityGroup
	next     int
	creates  int
	macs     int
	// OnList, when set, runs once, at the first listing by device;
	// OnCreate once, at the first create, before the port is made.
	OnList, OnCreate func()
	once, onceCreate sync.Once
	// NetworkCalls, when not nil, gets one value per Network call.
	NetworkCalls chan struct{}
	// LateBy, when set, makes the first create (the one OnCreate runs at)
	// fail and its port appear that much later.
	LateBy time.Duration
	// Slow, when set, makes every create as a busy Neutron does: received
	// at once, its port made and answered Slow later, whether or not the
	// caller still waits for the answer.
	Slow     time.Duration
	inFlight int // Slow creates received and not made yet
	// Calls are the names of the port calls made, in order.
	Calls []string
	// failGroups (SetFailGroups) runs at each change of a port's
	// security groups.
	failGroups func(port string) error
	// Binds, when set, binds every port given a host (binding:vif_type
	// other), as a mechanism driver does that can (networking-baremetal
	// with its agent for the node); without it the binding fails
	// (binding_failed), as when no driver can. Either way, as Neutron,
	// any update of a port with a host and no binding tries again, and a
	// bound port refuses a new MAC (PortBound).
	Binds bool
	// BindFault, when set, befalls the first update that gives a port a
	// host.
	BindFault   BindFault
	bindFaulted bool
	hostUpdates int
}

// SetFailGroups makes fail run at each change of a port's security
// groups, with the fake's lock held: an error it returns is the call's,
// the change made when the error is neutron.ErrUnavailable (the answer
// lost), not made otherwise (Neutron refused it). nil: no failure.
func (f *Neutron) SetFailGroups(fail func(port string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failGroups = fail
}

// BindFault is what befalls an update that gives a port a host.
type BindFault int

const (
	// BindAnswerLost: Neutron carries the update out, the answer is lost
	// (the client's timeout on a busy Neutron).
	BindAnswerLost BindFault = iota + 1
	// BindHalfDone: Neutron stores the host but not the binding
	// (vif_type unbound) and answers a 500, as Neutron on SQLite does
	// when its database is locked.
	BindHalfDone
)

// bind tries p's binding as Neutron does on a create or an update: no
// host is unbound, a bound port stays bound, else the binding is tried.
func (f *Neutron) bind(p *neutron.Port) {
	switch {
	case p.HostID == "":
		p.VIFType = neutron.VIFUnbound
	case bound(*p):
	case f.Binds:
		p.VIFType = "other"
	default:
		p.VIFType = "binding_failed"
	}
}

// bound says whether a mechanism driver has bound p.
func bound(p neutron.Port) bool {
	return p.VIFType != "" && p.VIFType != neutron.VIFUnbound && p.VIFType != "binding_failed"
}

func portBound(p neutron.Port, mac string) error {
	return answer(&neutron.APIError{Method: "PUT", URL: "/v2.0/ports/" + p.ID, Status: 409, Type: "PortBound",
		Message: fmt.Sprintf("Unable to complete operation on port %s, port is already bound, port type: %s, old_mac %s, new_mac %s.",
			p.ID, p.VIFType, p.MACAddress, mac)})
}

// HostUpdates is how many updates gave a port a host.
func (f *Neutron) HostUpdates() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hostUpdates
}

// New returns a Neutron with the given networks. A network with a subnet
// in n.Subnets gets 192.0.2.0/24 as its pool unless CIDR sets another.
func New(nets ...neutron.Network) *Neutron {
	f := &Neutron{networks: map[string]neutron.Network{}, cidrs: map[string]netip.Prefix{}, ports: map[string]neutron.Port{},
		groups: map[string]neutron.SecurityGroup{}}
	for _, n := range nets {
		f.AddNetwork(n, netip.MustParsePrefix("192.0.2.0/24"))
	}
	return f
}

// AddNetwork adds a network whose one subnet has prefix cidr.
func (f *Neutron) AddNetwork(n neutron.Network, cidr netip.Prefix) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(n.Subnets) == 0 {
		n.Subnets = []string{"sub-" + n.ID}
	}
	f.networks[n.ID] = n
	f.cidrs[n.ID] = cidr
}

func (f *Neutron) call(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Calls = append(f.Calls, name)
}

// Network reads one network.
func (f *Neutron) Network(_ context.Context, id string) (neutron.Network, error) {
	if f.NetworkCalls != nil {
		f.NetworkCalls <- struct{}{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.networks[id]
	if !ok {
		return n, answer(&neutron.APIError{Method: "GET", URL: "/v2.0/networks/" + id, Status: 404, Type: "NetworkNotFound",
			Message: "Network " + id + " could not be found."})
	}
	return n, nil
}

// NetworksFor lists the networks project may use: its own and the shared
// ones, its own first, by id.
func (f *Neutron) NetworksFor(_ context.Context, project string) ([]neutron.Network, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var own, shared []neutron.Network
	for _, n := range f.networks {
		switch {
		case n.ProjectID == project && project != "":
			own = append(own, n)
		case n.Shared:
			shared = append(shared, n)
		}
	}
	byID := func(a, b neutron.Network) int { return strings.Compare(a.ID, b.ID) }
	slices.SortFunc(own, byID)
	slices.SortFunc(shared, byID)
	return append(own, shared...), nil
}

// Add creates a port as Neutron would, with an address and a MAC, and
// no checks.
func (f *Neutron) Add(p neutron.PortCreate) neutron.Port {
	f.mu.Lock()
	defer f.mu.Unlock()
	port, _ := f.add(p)
	return port
}

func (f *Neutron) add(p neutron.PortCreate) (neutron.Port, error) {
	f.next++
	f.macs++
	port := neutron.Port{ID: fmt.Sprintf("%08x-0000-4000-8000-%012x", f.next, f.next), NetworkID: p.NetworkID, ProjectID: p.ProjectID,
		Name: p.Name, Description: p.Description, DeviceID: p.DeviceID, DeviceOwner: p.DeviceOwner, VNICType: p.VNICType,
		HostID: p.HostID, Status: "DOWN", MACAddress: fmt.Sprintf("fa:16:3e:00:%02x:%02x", f.macs/256, f.macs%256)}
	if p.MACAddress != "" {
		port.MACAddress = p.MACAddress
	}
	yes := true
	port.PortSecurityEnabled = &yes
	if n, ok := f.networks[p.NetworkID]; ok && n.PortSecurityEnabled != nil && !*n.PortSecurityEnabled {
		no := false
		port.PortSecurityEnabled = &no
	}
	switch {
	case len(p.SecurityGroups) > 0:
		for _, g := range p.SecurityGroups {
			if _, ok := f.groups[g]; !ok {
				return neutron.Port{}, groupNotFound(g)
			}
		}
		port.SecurityGroups = slices.Clone(p.SecurityGroups)
	case *port.PortSecurityEnabled:
		port.SecurityGroups = []string{f.defaultGroup(p.ProjectID)}
	}
	if port.VNICType == "" {
		port.VNICType = neutron.VNICNormal
	}
	sub := "sub-" + p.NetworkID
	if n, ok := f.networks[p.NetworkID]; ok && len(n.Subnets) > 0 {
		sub = n.Subnets[0]
	}
	switch {
	case len(p.FixedIPs) > 0:
		for _, ip := range p.FixedIPs {
			a, err := netip.ParseAddr(ip.IPAddress)
			if cidr, ok := f.cidrs[p.NetworkID]; ok && (err != nil || !cidr.Contains(a)) {
				return neutron.Port{}, answer(&neutron.APIError{Method: "POST", URL: "/v2.0/ports", Status: 400, Type: "InvalidIpForNetwork",
					Message: "IP address " + ip.IPAddress + " is not a valid IP for any of the subnets on the specified network."})
			}
			if f.addressTaken(p.NetworkID, ip.IPAddress) {
				return neutron.Port{}, answer(&neutron.APIError{Method: "POST", URL: "/v2.0/ports", Status: 409, Type: "IpAddressAlreadyAllocated",
					Message: "IP address " + ip.IPAddress + " already allocated in subnet " + sub})
			}
			port.FixedIPs = append(port.FixedIPs, neutron.FixedIP{SubnetID: sub, IPAddress: ip.IPAddress})
		}
	default:
		for i := 10 + f.next; ; i++ {
			a := fmt.Sprintf("192.0.2.%d", i%250)
			if cidr, ok := f.cidrs[p.NetworkID]; ok && cidr.Addr().Is4() {
				b := cidr.Addr().As4()
				a = netip.AddrFrom4([4]byte{b[0], b[1], b[2], byte(i % 250)}).String()
			}
			if !f.addressTaken(p.NetworkID, a) {
				port.FixedIPs = []neutron.FixedIP{{SubnetID: sub, IPAddress: a}}
				break
			}
		}
	}
	if f.macTaken(p.NetworkID, port.MACAddress, "") {
		return neutron.Port{}, macInUse(port.MACAddress, p.NetworkID)
	}
	f.bind(&port)
	f.ports[port.ID] = port
	return port, nil
}

// answer is Neutron's error answer as the neutron client returns it:
// wrapping the sentinel of its status and the *neutron.APIError.
func answer(ae *neutron.APIError) error {
	sentinel := neutron.ErrUnavailable
	switch ae.Status {
	case 400:
		sentinel = neutron.ErrInvalid
	case 404:
		sentinel = neutron.ErrNotFound
	case 409:
		sentinel = neutron.ErrConflict
	}
	return fmt.Errorf("%w: %w", sentinel, ae)
}

func macInUse(mac, network string) error {
	return answer(&neutron.APIError{Method: "PUT", URL: "/v2.0/ports", Status: 409, Type: "MacAddressInUse",
		Message: "Unable to complete operation for network " + network + ". The mac address " + mac + " is in use."})
}

func (f *Neutron) addressTaken(network, addr string) bool {
	for _, q := range f.ports {
		if q.NetworkID != network {
			continue
		}
		for _, ip := range q.FixedIPs {
			if ip.IPAddress == addr {
				return true
			}
		}
	}
	return false
}

func (f *Neutron) macTaken(network, mac, except string) bool {
	for _, q := range f.ports {
		if q.ID != except && q.NetworkID == network && q.MACAddress == mac {
			return true
		}
	}
	return false
}

// Port reads one port.
func (f *Neutron) Port(_ context.Context, id string) (neutron.Port, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.ports[id]
	if !ok {
		return p, portNotFound(id)
	}
	return p, nil
}

func portNotFound(id string) error {
	return answer(&neutron.APIError{Method: "GET", URL: "/v2.0/ports/" + id, Status: 404, Type: "PortNotFound",
		Message: "Port " + id + " could not be found."})
}

// SetMAC changes a port's MAC as Ironic's VIF attach does, and fails as
// Neutron does when another port on the network has it.
func (f *Neutron) SetMAC(id, mac string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.ports[id]
	if !ok {
		return portNotFound(id)
	}
	if f.macTaken(p.NetworkID, mac, id) {
		return macInUse(mac, p.NetworkID)
	}
	if mac != p.MACAddress && bound(p) {
		return portBound(p, mac)
	}
	p.MACAddress = mac
	f.ports[id] = p
	return nil
}

// CreatePort creates a port, as Neutron checks it.
func (f *Neutron) CreatePort(ctx context.Context, p neutron.PortCreate) (neutron.Port, error) {
	if by, ok := neutron.SendBy(ctx); ok && !time.Now().Before(by) {
		return neutron.Port{}, fmt.Errorf("creating a port: %w", neutron.ErrNotSent)
	}
	f.call("create")
	if f.Slow > 0 {
		type answer struct {
			port neutron.Port
			err  error
		}
		done := make(chan answer, 1)
		f.mu.Lock()
		f.inFlight++
		f.mu.Unlock()
		time.AfterFunc(f.Slow, func() {
			port, err := f.create(p)
			f.mu.Lock()
			f.inFlight--
			f.mu.Unlock()
			done <- answer{port, err}
		})
		select {
		case a := <-done:
			return a.port, a.err
		case <-ctx.Done():
			return neutron.Port{}, fmt.Errorf("%w: no answer: %w", neutron.ErrUnavailable, ctx.Err())
		}
	}
	late := false
	if f.OnCreate != nil {
		f.onceCreate.Do(func() { f.OnCreate(); late = f.LateBy > 0 })
	}
	if late {
		// The request reached Neutron, the answer is lost, and Neutron
		// makes the port a while later.
		time.AfterFunc(f.LateBy, func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.creates++
			_, _ = f.add(p)
		})
		return neutron.Port{}, fmt.Errorf("%w: no answer", neutron.ErrUnavailable)
	}
	return f.create(p)
}

// InFlight is how many Slow creates Neutron received and has not made yet.
func (f *Neutron) InFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inFlight
}

// create makes the port of a create that reached Neutron.
func (f *Neutron) create(p neutron.PortCreate) (neutron.Port, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.networks[p.NetworkID]; !ok {
		return neutron.Port{}, answer(&neutron.APIError{Method: "POST", URL: "/v2.0/ports", Status: 404, Type: "NetworkNotFound",
			Message: "Network " + p.NetworkID + " could not be found."})
	}
	port, err := f.add(p)
	if err == nil {
		f.creates++
	}
	return port, err
}

// Ports lists the ports fl selects.
func (f *Neutron) Ports(_ context.Context, fl neutron.PortFilter) ([]neutron.Port, error) {
	if fl.DeviceID != "" && f.OnList != nil {
		f.once.Do(f.OnList)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []neutron.Port
	for _, p := range f.ports {
		if fl.DeviceID != "" && p.DeviceID != fl.DeviceID || fl.NetworkID != "" && p.NetworkID != fl.NetworkID ||
			fl.ProjectID != "" && p.ProjectID != fl.ProjectID || fl.MACAddress != "" && p.MACAddress != fl.MACAddress {
			continue
		}
		if fl.FixedIP != "" && !slices.ContainsFunc(p.FixedIPs, func(ip neutron.FixedIP) bool { return ip.IPAddress == fl.FixedIP }) {
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b neutron.Port) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// UpdatePort changes the set fields of a port.
func (f *Neutron) UpdatePort(_ context.Context, id string, u neutron.PortUpdate) (neutron.Port, error) {
	f.call("update")
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.ports[id]
	if !ok {
		return p, portNotFound(id)
	}
	if u.DeviceID != nil {
		p.DeviceID = *u.DeviceID
	}
	if u.DeviceOwner != nil {
		p.DeviceOwner = *u.DeviceOwner
	}
	if u.HostID != nil {
		p.HostID = *u.HostID
	}
	if u.VNICType != "" {
		p.VNICType = u.VNICType
	}
	if u.MACAddress != nil {
		if f.macTaken(p.NetworkID, *u.MACAddress, id) {
			return p, macInUse(*u.MACAddress, p.NetworkID)
		}
		if *u.MACAddress != p.MACAddress && bound(p) {
			return f.ports[id], portBound(p, *u.MACAddress)
		}
		p.MACAddress = *u.MACAddress
	}
	if u.Profile != nil {
		p.Profile = u.Profile
	}
	if u.SecurityGroups != nil {
		for _, g := range *u.SecurityGroups {
			if _, ok := f.groups[g]; !ok {
				return p, groupNotFound(g)
			}
		}
		if len(*u.SecurityGroups) > 0 && !p.SecurityGroupsApply() {
			return p, answer(&neutron.APIError{Method: "PUT", URL: "/v2.0/ports/" + id, Status: 409, Type: "PortSecurityAndIPRequiredForSecurityGroups",
				Message: "Port security must be enabled and port must have an IP address in order to use security groups."})
		}
		if f.failGroups != nil {
			if err := f.failGroups(id); err != nil {
				if errors.Is(err, neutron.ErrUnavailable) {
					p.SecurityGroups = slices.Clone(*u.SecurityGroups)
					f.ports[id] = p
				}
				return neutron.Port{}, err
			}
		}
		p.SecurityGroups = slices.Clone(*u.SecurityGroups)
	}
	if u.HostID != nil && p.HostID != f.ports[id].HostID {
		// A new host unbinds the port first.
		p.VIFType = neutron.VIFUnbound
	}
	f.bind(&p)
	if u.HostID != nil && *u.HostID != "" {
		f.hostUpdates++
		if f.BindFault != 0 && !f.bindFaulted {
			f.bindFaulted = true
			if f.BindFault == BindHalfDone {
				p.VIFType = neutron.VIFUnbound
				f.ports[id] = p
				return neutron.Port{}, answer(&neutron.APIError{Method: "PUT", URL: "/v2.0/ports/" + id, Status: 500,
					Type: "HTTPInternalServerError", Message: "Request Failed: internal server error while processing your request."})
			}
			f.ports[id] = p
			return neutron.Port{}, fmt.Errorf("%w: context deadline exceeded", neutron.ErrUnavailable)
		}
	}
	f.ports[id] = p
	return p, nil
}

// UnbindPort empties the port's device, owner and host.
func (f *Neutron) UnbindPort(ctx context.Context, id string) (neutron.Port, error) {
	f.call("unbind")
	empty := ""
	return f.UpdatePort(ctx, id, neutron.PortUpdate{DeviceID: &empty, DeviceOwner: &empty, HostID: &empty, Profile: map[string]any{}})
}

// ResetMAC gives the port a new MAC of Neutron's choice.
func (f *Neutron) ResetMAC(_ context.Context, id string) (neutron.Port, error) {
	f.call("reset-mac")
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.ports[id]
	if !ok {
		return p, portNotFound(id)
	}
	f.macs++
	p.MACAddress = fmt.Sprintf("fa:16:3e:01:%02x:%02x", f.macs/256, f.macs%256)
	f.ports[id] = p
	return p, nil
}

// DeletePort deletes a port; one already gone is no error.
func (f *Neutron) DeletePort(_ context.Context, id string) error {
	f.call("delete")
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.ports, id)
	return nil
}

// Get returns a port as it is now.
func (f *Neutron) Get(id string) (neutron.Port, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.ports[id]
	return p, ok
}

// OfDevice lists the ports whose device is id.
func (f *Neutron) OfDevice(id string) []neutron.Port {
	ps, _ := f.Ports(context.Background(), neutron.PortFilter{DeviceID: id})
	return ps
}

// All lists every port.
func (f *Neutron) All() []neutron.Port {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]neutron.Port, 0, len(f.ports))
	for _, p := range f.ports {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b neutron.Port) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Created is how many ports CreatePort made.
func (f *Neutron) Created() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creates
}
