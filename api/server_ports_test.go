package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
)

// A server's recorded Neutron ports are its addresses, in Nova's shape:
// under the network's name, each fixed address with its version, type
// and the port's MAC; /ips and the ip filter of a list read the same.
func TestServerAddressesFromPorts(t *testing.T) {
	e, _, _ := hypervisorEnv(t)
	s, err := e.peer.Node.Store().Server(adoptedID)
	if err != nil {
		t.Fatal(err)
	}
	e.propose(&fsm.RecordServerPort{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Port: fsm.ServerPort{ID: "p1",
		NetworkID: "net-1", NetworkName: "provider", MAC: "52:54:00:aa:00:01",
		FixedIPs: []fsm.PortIP{{Address: "192.0.2.15", Version: 4}, {Address: "2001:db8::15", Version: 6}}}})
	want := `{"provider":[{"OS-EXT-IPS-MAC:mac_addr":"52:54:00:aa:00:01","OS-EXT-IPS:type":"fixed","addr":"192.0.2.15","version":4},` +
		`{"OS-EXT-IPS-MAC:mac_addr":"52:54:00:aa:00:01","OS-EXT-IPS:type":"fixed","addr":"2001:db8::15","version":6}]}`
	shown := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	r := do(t, e.ts, http.MethodGet, computeBase+"/servers/"+adoptedID, adminToken, "", nil)
	if got := shown(get(t, r.json(t), "server", "addresses")); r.code != http.StatusOK || got != want {
		t.Fatalf("addresses %s (%s), want %s", got, r, want)
	}
	// Nova's ips controller, and its update and rebuild answers below
	// 2.75, leave the extended attributes out.
	plain := `{"provider":[{"addr":"192.0.2.15","version":4},{"addr":"2001:db8::15","version":6}]}`
	r = do(t, e.ts, http.MethodGet, computeBase+"/servers/"+adoptedID+"/ips", adminToken, "", nil)
	if got := shown(get(t, r.json(t), "addresses")); got != plain {
		t.Fatalf("ips %s, want %s", got, plain)
	}
	r = do(t, e.ts, http.MethodGet, computeBase+"/servers/"+adoptedID+"/ips/provider", adminToken, "", nil)
	if got := shown(r.json(t)); r.code != http.StatusOK || got != plain {
		t.Fatalf("ips of provider %s, want %s", got, plain)
	}
	for mv, w := range map[string]string{"2.74": plain, "2.75": want} {
		r = do(t, e.ts, http.MethodPut, computeBase+"/servers/"+adoptedID, adminToken, `{"server": {"name": "db-1"}}`,
			map[string]string{"OpenStack-API-Version": "compute " + mv})
		if got := shown(get(t, r.json(t), "server", "addresses")); r.code != http.StatusOK || got != w {
			t.Fatalf("update at %s: addresses %s (%s), want %s", mv, got, r, w)
		}
	}
	// A server being built shows none, as Nova hides them while building.
	const building = "a1b2c3d4-0000-4000-8000-0000000000b1"
	e.propose(&fsm.CreateFlavor{Flavor: fsm.Flavor{ID: "vm", Name: "vm", VCPUs: 1, RAM: 1, Disk: 1, RxTxFactor: 1}})
	e.propose(&fsm.CreateServer{ID: building, Name: "b", FlavorID: "vm", ImageRef: "img", Host: "kvm-1",
		Networks: []fsm.Network{{UUID: "net-1"}}})
	r = do(t, e.ts, http.MethodGet, computeBase+"/servers/"+building, adminToken, "", nil)
	if got := shown(get(t, r.json(t), "server", "addresses")); r.code != http.StatusOK || got != "{}" ||
		get(t, r.json(t), "server", "status") != "BUILD" {
		t.Fatalf("addresses of a server in BUILD %s (%s), want {}", got, r)
	}
	r = do(t, e.ts, http.MethodGet, computeBase+"/servers?ip=192.0.2.15", adminToken, "", nil)
	if list, _ := get(t, r.json(t), "servers").([]any); len(list) != 1 {
		t.Fatalf("servers with ip 192.0.2.15: %s", r)
	}
	r = do(t, e.ts, http.MethodGet, computeBase+"/servers?ip=10.9.9.9", adminToken, "", nil)
	if list, _ := get(t, r.json(t), "servers").([]any); len(list) != 0 {
		t.Fatalf("servers with ip 10.9.9.9: %s", r)
	}
}

// fakeNetworks is Neutron as corral's service user sees it.
type fakeNetworks struct {
	nets   map[string]neutron.Network
	ports  map[string]neutron.Port
	groups []neutron.SecurityGroup
}

func (f fakeNetworks) SecurityGroups(_ context.Context, fl neutron.SecurityGroupFilter) ([]neutron.SecurityGroup, error) {
	var out []neutron.SecurityGroup
	for _, g := range f.groups {
		if fl.ProjectID != "" && g.ProjectID != fl.ProjectID || fl.Name != "" && g.Name != fl.Name ||
			len(fl.IDs) > 0 && !slices.Contains(fl.IDs, g.ID) {
			continue
		}
		out = append(out, g)
	}
	return out, nil
}

func (f fakeNetworks) NetworksFor(_ context.Context, project string) ([]neutron.Network, error) {
	var out []neutron.Network
	for _, n := range f.nets {
		if n.VisibleTo(project) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b neutron.Network) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (f fakeNetworks) Ports(_ context.Context, fl neutron.PortFilter) ([]neutron.Port, error) {
	var out []neutron.Port
	for _, p := range f.ports {
		if fl.NetworkID != "" && p.NetworkID != fl.NetworkID {
			continue
		}
		if fl.FixedIP != "" && !slices.ContainsFunc(p.FixedIPs, func(ip neutron.FixedIP) bool { return ip.IPAddress == fl.FixedIP }) {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

func (f fakeNetworks) Network(_ context.Context, id string) (neutron.Network, error) {
	if n, ok := f.nets[id]; ok {
		return n, nil
	}
	return neutron.Network{}, fmt.Errorf("%w: network %s", neutron.ErrNotFound, id)
}

func (f fakeNetworks) Port(_ context.Context, id string) (neutron.Port, error) {
	if p, ok := f.ports[id]; ok {
		return p, nil
	}
	return neutron.Port{}, fmt.Errorf("%w: port %s", neutron.ErrNotFound, id)
}

// With [neutron], a boot's networks and ports are checked as Nova's
// validate_networks checks them, with the caller's visibility: the
// caller's own and shared networks, its own free ports; an admin any.
// A refused boot changes nothing.
func TestBootNetworksCheckedInNeutron(t *testing.T) {
	const (
		ownNet    = "0a000000-0000-4000-8000-0000000000a1"
		sharedNet = "0a000000-0000-4000-8000-0000000000b1"
		otherNet  = "0a000000-0000-4000-8000-0000000000b2"
		noNet     = "0a000000-0000-4000-8000-0000000000ff"
		freePort  = "0b000000-0000-4000-8000-0000000000a1"
		usedPort  = "0b000000-0000-4000-8000-0000000000a2"
		otherPort = "0b000000-0000-4000-8000-0000000000b1"
		noPort    = "0b000000-0000-4000-8000-0000000000ff"
	)
	nt := fakeNetworks{
		nets: map[string]neutron.Network{ownNet: {ID: ownNet, ProjectID: "demo-a"}, sharedNet: {ID: sharedNet, ProjectID: "demo-b", Shared: true},
			otherNet: {ID: otherNet, ProjectID: "demo-b"}},
		ports: map[string]neutron.Port{freePort: {ID: freePort, ProjectID: "demo-a"}, usedPort: {ID: usedPort, ProjectID: "demo-a", DeviceID: "elsewhere"},
			otherPort: {ID: otherPort, ProjectID: "demo-b"}},
	}
	e := newKeystoneEnv(t, time.Minute, func(c *api.Config) { c.Networks = nt })
	e.issueDemoTokens()
	createFlavor(t, e.env, `{"flavor": {"name": "f", "id": "f", "ram": 1, "vcpus": 1, "disk": 1}}`)
	boot := func(token, nets string) response {
		return do(t, e.ts, http.MethodPost, computeBase+"/servers", token,
			`{"server": {"name": "a", "imageRef": "img", "flavorRef": "f", "networks": `+nets+`}}`, nil)
	}
	for _, c := range []struct {
		name, token, nets string
		code              int
		msg               string
	}{
		{"unknown network", aliceToken, `[{"uuid": "` + noNet + `"}]`, 400, "Network " + noNet + " could not be found."},
		{"another project's network", aliceToken, `[{"uuid": "` + otherNet + `"}]`, 400, "Network " + otherNet + " could not be found."},
		{"unknown port", aliceToken, `[{"port": "` + noPort + `"}]`, 400, "Port id " + noPort + " could not be found."},
		{"another project's port", aliceToken, `[{"port": "` + otherPort + `"}]`, 400, "Port id " + otherPort + " could not be found."},
		{"a port in use", aliceToken, `[{"port": "` + usedPort + `"}]`, 409, "Port " + usedPort + " is still in use."},
		{"a good network, then an unknown one", aliceToken, `[{"uuid": "` + ownNet + `"}, {"uuid": "` + noNet + `"}]`, 400, "Network " + noNet + " could not be found."},
	} {
		before := e.digest()
		r := boot(c.token, c.nets)
		if _, msg := errorMessage(t, r); r.code != c.code || msg != c.msg {
			t.Errorf("%s: %s, want %d %q", c.name, r, c.code, c.msg)
		}
		if e.digest() != before {
			t.Errorf("%s: the refused boot changed the state", c.name)
		}
	}
	for _, c := range []struct{ name, token, nets string }{
		{"own network", aliceToken, `[{"uuid": "` + ownNet + `"}]`},
		{"shared network", aliceToken, `[{"uuid": "` + sharedNet + `"}]`},
		{"own free port", aliceToken, `[{"port": "` + freePort + `"}]`},
		{"an admin, another project's network", ksAdmin, `[{"uuid": "` + otherNet + `"}]`},
		{"no networks", aliceToken, `"none"`},
	} {
		if r := boot(c.token, c.nets); r.code != http.StatusAccepted {
			t.Errorf("%s: %s, want 202", c.name, r)
		}
	}
}

// With [neutron], Nova's forms of a boot's networks: "auto" and networks
// left out (below 2.37) take the one network the project may use (its
// own or a shared one), are Nova's 409 when there are several, and with
// none "auto" is Nova's 400 without auto-allocated topology while a boot
// without networks gets no port; "none" asks for no port; a fixed_ip is
// kept for the port's create, and one a port of the network already has
// is Nova's 400. A refused boot changes nothing.
func TestBootNetworkFormsWithNeutron(t *testing.T) {
	const (
		ownNet    = "0a000000-0000-4000-8000-0000000000a1"
		sharedNet = "0a000000-0000-4000-8000-0000000000b1"
		otherNet  = "0a000000-0000-4000-8000-0000000000b2"
	)
	nt := fakeNetworks{
		nets: map[string]neutron.Network{ownNet: {ID: ownNet, ProjectID: "demo-a"}, sharedNet: {ID: sharedNet, ProjectID: "demo-b", Shared: true},
			otherNet: {ID: otherNet, ProjectID: "demo-b"}},
		ports: map[string]neutron.Port{"p-taken": {ID: "p-taken", NetworkID: ownNet, ProjectID: "demo-a", DeviceID: "srv-x",
			FixedIPs: []neutron.FixedIP{{IPAddress: "192.0.2.50"}}}},
	}
	e := newKeystoneEnv(t, time.Minute, func(c *api.Config) { c.Networks = nt })
	e.issueDemoTokens()
	createFlavor(t, e.env, `{"flavor": {"name": "f", "id": "f", "ram": 1, "vcpus": 1, "disk": 1}}`)
	const v237 = "compute 2.37"
	boot := func(mv, nets string) response {
		body := `{"server": {"name": "a", "imageRef": "img", "flavorRef": "f"` + nets + `}}`
		return do(t, e.ts, http.MethodPost, computeBase+"/servers", aliceToken, body, map[string]string{"OpenStack-API-Version": mv})
	}
	refused := func(name string, r response, code int, msg string, before string) {
		t.Helper()
		if _, got := errorMessage(t, r); r.code != code || got != msg {
			t.Errorf("%s: %s, want %d %q", name, r, code, msg)
		}
		if e.digest() != before {
			t.Errorf("%s: the refused boot changed the state", name)
		}
	}
	booted := func(name string, r response, want []fsm.Network) {
		t.Helper()
		if r.code != http.StatusAccepted {
			t.Errorf("%s: %s, want 202", name, r)
			return
		}
		id, _ := get(t, r.json(t), "server", "id").(string)
		s, err := e.peer.Node.Store().Server(id)
		if err != nil || fmt.Sprint(s.Networks) != fmt.Sprint(want) {
			t.Errorf("%s: server's networks %+v (%v), want %+v", name, s.Networks, err, want)
		}
	}
	const ambiguous = "Multiple possible networks found, use a Network ID to be more specific."

	// Alice's project may use its own network and the shared one.
	before := e.digest()
	refused("auto, two networks", boot(v237, `, "networks": "auto"`), 409, ambiguous, before)
	refused("no networks below 2.37, two networks", boot("compute 2.36", ``), 409, ambiguous, before)
	booted("none", boot(v237, `, "networks": "none"`), nil)
	refused("a fixed IP in use", boot(v237, `, "networks": [{"uuid": "`+ownNet+`", "fixed_ip": "192.0.2.50"}]`), 400,
		"Fixed IP address 192.0.2.50 is already in use on instance srv-x.", e.digest())
	booted("a free fixed IP", boot(v237, `, "networks": [{"uuid": "`+ownNet+`", "fixed_ip": "192.0.2.51"}]`),
		[]fsm.Network{{UUID: ownNet, FixedIP: "192.0.2.51"}})
	refused("a fixed IP that is no address", boot(v237, `, "networks": [{"uuid": "`+ownNet+`", "fixed_ip": "192.0.2"}]`), 400,
		"Invalid input for field/attribute fixed_ip. Value: 192.0.2. '192.0.2' is not a 'ipv4' nor a 'ipv6'", e.digest())

	// Only the shared one.
	delete(nt.nets, ownNet)
	booted("auto, one network", boot(v237, `, "networks": "auto"`), []fsm.Network{{UUID: sharedNet}})
	booted("no networks below 2.37, one network", boot("compute 2.36", ``), []fsm.Network{{UUID: sharedNet}})

	// None at all.
	delete(nt.nets, sharedNet)
	refused("auto, no network", boot(v237, `, "networks": "auto"`), 400,
		"Unable to automatically allocate a network for project demo-a", e.digest())
	booted("no networks below 2.37, no network", boot("compute 2.36", ``), nil)
	booted("none, no network", boot(v237, `, "networks": "none"`), nil)
}
