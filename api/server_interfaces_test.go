package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/wire"
)

// lockedNetworks is fakeNetworks that the test and the API read at once.
type lockedNetworks struct {
	mu sync.Mutex
	fakeNetworks
	groupIDsAsked []string // the ids of the security group listings, in order
}

func (f *lockedNetworks) Network(ctx context.Context, id string) (neutron.Network, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fakeNetworks.Network(ctx, id)
}

func (f *lockedNetworks) Port(ctx context.Context, id string) (neutron.Port, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fakeNetworks.Port(ctx, id)
}

func (f *lockedNetworks) NetworksFor(ctx context.Context, project string) ([]neutron.Network, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fakeNetworks.NetworksFor(ctx, project)
}

func (f *lockedNetworks) Ports(ctx context.Context, fl neutron.PortFilter) ([]neutron.Port, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []neutron.Port
	for _, p := range f.ports {
		if fl.DeviceID != "" && p.DeviceID != fl.DeviceID {
			continue
		}
		if ps, _ := f.fakeNetworks.Ports(ctx, neutron.PortFilter{NetworkID: fl.NetworkID, FixedIP: fl.FixedIP}); !containsPort(ps, p.ID) {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

func containsPort(ps []neutron.Port, id string) bool {
	for _, p := range ps {
		if p.ID == id {
			return true
		}
	}
	return false
}

func (f *lockedNetworks) SecurityGroups(ctx context.Context, fl neutron.SecurityGroupFilter) ([]neutron.SecurityGroup, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.groupIDsAsked = append(f.groupIDsAsked, fl.IDs...)
	return f.fakeNetworks.SecurityGroups(ctx, fl)
}

func (f *lockedNetworks) put(p neutron.Port) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ports[p.ID] = p
}

// os-interface with [neutron]: the server's ports as Neutron shows them
// (readers of its project; 404 for another project's), an attach checked
// as Nova checks it and then carried out by the owner (played here by the
// test: it records the port and commits the outcome), answered once done
// (200, the attachment) or failed (Nova's 500); a detach accepted (202);
// both in the server's history; refused requests change nothing.
func TestServerInterfaces(t *testing.T) {
	const (
		server   = "a1b2c3d4-0000-4000-8000-0000000000f1"
		node     = "6fae68da-108b-4a9d-87c4-0000000000f1"
		netA     = "0a000000-0000-4000-8000-0000000000a1"
		netB     = "0a000000-0000-4000-8000-0000000000b1"
		otherNet = "0a000000-0000-4000-8000-0000000000c1"
		bootPort = "0b000000-0000-4000-8000-000000000001"
		newPort  = "0b000000-0000-4000-8000-000000000002"
		hers     = "0b000000-0000-4000-8000-000000000003"
		used     = "0b000000-0000-4000-8000-000000000004"
	)
	nt := &lockedNetworks{fakeNetworks: fakeNetworks{
		nets: map[string]neutron.Network{netA: {ID: netA, ProjectID: "demo-a"}, netB: {ID: netB, Shared: true},
			otherNet: {ID: otherNet, ProjectID: "demo-b"}},
		ports: map[string]neutron.Port{
			bootPort: {ID: bootPort, NetworkID: netA, ProjectID: "demo-a", DeviceID: server, MACAddress: "52:54:00:aa:00:01", Status: "ACTIVE",
				FixedIPs: []neutron.FixedIP{{SubnetID: "sub-a", IPAddress: "192.0.2.10"}}},
			hers: {ID: hers, NetworkID: netB, ProjectID: "demo-a"},
			used: {ID: used, NetworkID: netB, ProjectID: "demo-a", DeviceID: "elsewhere", FixedIPs: []neutron.FixedIP{{IPAddress: "198.51.100.7"}}},
		}}}
	e := newKeystoneEnv(t, time.Minute, func(c *api.Config) { c.Networks = nt })
	e.issueDemoTokens()
	e.propose(&fsm.SyncNodes{Upserts: []fsm.Node{{UUID: node, ResourceClass: "baremetal", ProvisionState: "active", PowerState: "power on",
		InstanceUUID: server, AllocationUUID: server}}})
	body := `{"id": "` + server + `", "name": "db-1", "image_ref": "img", "node_uuid": "` + node + `", "allocation_uuid": "` + server + `",
		"project_id": "demo-a", "user_id": "alice-id", "flavor": {"id": "bm", "name": "bm", "vcpus": 1, "ram": 1, "disk": 1}}`
	if r := do(t, e.ts, http.MethodPost, wire.AdoptServerPath, adminToken, body, nil); r.code != http.StatusCreated {
		t.Fatalf("adopt: %s", r)
	}
	s, err := e.peer.Node.Store().Server(server)
	if err != nil {
		t.Fatal(err)
	}
	e.propose(&fsm.RecordServerPort{ID: server, Host: s.Host, Epoch: s.Epoch, Port: fsm.ServerPort{ID: bootPort, NetworkID: netA}})
	base := computeBase + "/servers/" + server + "/os-interface"

	// The owner, played: each interface request is done at once; an
	// attach of network B gets newPort, one of her port takes it over,
	// an attach with the fixed address 192.0.2.99 fails.
	// It ends before the test does (the harness's Close clears the
	// peer's Node as the test's cleanup runs).
	stop, ended := make(chan struct{}), make(chan struct{})
	defer func() { close(stop); <-ended }()
	peer := e.peer.Node
	go func() {
		defer close(ended)
		store := peer.Store()
		for {
			idx := store.AppliedIndex()
			if in := store.ServerNet(server).Interface; in != nil && !in.Done {
				fin := &fsm.FinishInterfaceAction{ID: server, Host: s.Host, Epoch: s.Epoch, Kind: in.Kind, RequestedAt: in.RequestedAt}
				switch {
				case in.Kind == fsm.ActionDetachInterface:
					_, _ = peer.Propose(context.Background(), &fsm.ForgetServerPort{ID: server, Host: s.Host, Epoch: s.Epoch, PortID: in.PortID})
				case in.FixedIP == "192.0.2.99":
					fin.Fault = "Neutron refused the address"
				default:
					id := newPort
					if in.PortID != "" {
						id = in.PortID
					}
					nt.put(neutron.Port{ID: id, NetworkID: netB, ProjectID: "demo-a", DeviceID: server, MACAddress: "fa:16:3e:00:00:02", Status: "DOWN",
						FixedIPs: []neutron.FixedIP{{SubnetID: "sub-b", IPAddress: "198.51.100.5"}}})
					_, _ = peer.Propose(context.Background(), &fsm.RecordServerPort{ID: server, Host: s.Host, Epoch: s.Epoch,
						Port: fsm.ServerPort{ID: id, NetworkID: netB}})
					fin.PortID = id
				}
				_, _ = peer.Propose(context.Background(), fin)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			_ = store.WaitApplied(ctx, idx+1)
			cancel()
			select {
			case <-stop:
				return
			default:
			}
		}
	}()

	r := do(t, e.ts, http.MethodGet, base, carolToken, "", nil)
	want := `[{"fixed_ips":[{"ip_address":"192.0.2.10","subnet_id":"sub-a"}],"mac_addr":"52:54:00:aa:00:01","net_id":"` + netA +
		`","port_id":"` + bootPort + `","port_state":"ACTIVE"}]`
	if got := jsonOf(t, get(t, r.json(t), "interfaceAttachments")); r.code != http.StatusOK || got != want {
		t.Fatalf("list: %s, want %s", r, want)
	}
	r = do(t, e.ts, http.MethodGet, base+"/"+bootPort, carolToken, "", mv("2.70"))
	if r.code != http.StatusOK || get(t, r.json(t), "interfaceAttachment", "port_id") != bootPort ||
		get(t, r.json(t), "interfaceAttachment", "tag") != nil {
		t.Fatalf("show: %s", r)
	}
	before := e.digest()
	for _, c := range []struct {
		name, token, method, path, body string
		code                            int
		msg                             string
	}{
		{"another project's reader lists", bobToken, http.MethodGet, base, "", 404, "Instance " + server + " could not be found."},
		{"a reader attaches", carolToken, http.MethodPost, base, `{"interfaceAttachment": {"net_id": "` + netB + `"}}`, 403, ""},
		{"a port not the server's", aliceToken, http.MethodGet, base + "/" + hers, "", 404, "Instance " + server + " does not have a port with id " + hers},
		{"an unknown port", aliceToken, http.MethodGet, base + "/0b000000-0000-4000-8000-0000000000ff", "", 404, "Port id 0b000000-0000-4000-8000-0000000000ff could not be found."},
		{"both", aliceToken, http.MethodPost, base, `{"interfaceAttachment": {"net_id": "` + netB + `", "port_id": "` + hers + `"}}`, 400, "Must not input both network_id and port_id"},
		{"an address without a network", aliceToken, http.MethodPost, base, `{"interfaceAttachment": {"port_id": "` + hers + `", "fixed_ips": [{"ip_address": "198.51.100.9"}]}}`, 400, "Must input network_id when request IP address"},
		{"not an address", aliceToken, http.MethodPost, base, `{"interfaceAttachment": {"net_id": "` + netB + `", "fixed_ips": [{"ip_address": "300.1.1.1"}]}}`, 400, "Invalid input for field/attribute ip_address. Value: 300.1.1.1. '300.1.1.1' is not a 'ipv4' nor a 'ipv6'"},
		{"a network of another project", aliceToken, http.MethodPost, base, `{"interfaceAttachment": {"net_id": "` + otherNet + `"}}`, 404, "Network " + otherNet + " could not be found."},
		{"a port in use", aliceToken, http.MethodPost, base, `{"interfaceAttachment": {"port_id": "` + used + `"}}`, 409, "Port " + used + " is still in use."},
		{"an address in use", aliceToken, http.MethodPost, base, `{"interfaceAttachment": {"net_id": "` + netB + `", "fixed_ips": [{"ip_address": "198.51.100.7"}]}}`, 409, "Fixed IP address 198.51.100.7 is already in use on instance elsewhere."},
		{"no network named, two usable", aliceToken, http.MethodPost, base, ``, 400, "Multiple possible networks found, use a Network ID to be more specific."},
		{"a tag", aliceToken, http.MethodPost, base, `{"interfaceAttachment": {"net_id": "` + netB + `", "tag": "t"}}`, 400, "Tagged network interface attachment is not supported for this server instance."},
		{"detach of a port not attached", aliceToken, http.MethodDelete, base + "/" + hers, "", 404, "Port " + hers + " is not attached"},
	} {
		var hdr map[string]string
		if c.name == "a tag" {
			hdr = mv("2.49")
		}
		r := do(t, e.ts, c.method, c.path, c.token, c.body, hdr)
		if r.code != c.code {
			t.Errorf("%s: %s, want %d", c.name, r, c.code)
			continue
		}
		if c.msg != "" {
			if _, msg := errorMessage(t, r); msg != c.msg {
				t.Errorf("%s: %q, want %q", c.name, msg, c.msg)
			}
		}
	}
	if e.digest() != before {
		t.Fatal("a refused interface request changed the state")
	}

	r = do(t, e.ts, http.MethodPost, base, aliceToken, `{"interfaceAttachment": {"net_id": "`+netB+`"}}`, nil)
	if r.code != http.StatusOK || get(t, r.json(t), "interfaceAttachment", "port_id") != newPort ||
		get(t, r.json(t), "interfaceAttachment", "net_id") != netB {
		t.Fatalf("attach: %s", r)
	}
	r = do(t, e.ts, http.MethodPost, base, aliceToken, `{"interfaceAttachment": {"net_id": "`+netB+`", "fixed_ips": [{"ip_address": "192.0.2.99"}]}}`, nil)
	if _, msg := errorMessage(t, r); r.code != http.StatusInternalServerError || msg != "Failed to attach network adapter device to "+server {
		t.Fatalf("failed attach: %s", r)
	}
	if r := do(t, e.ts, http.MethodDelete, base+"/"+newPort, aliceToken, "", nil); r.code != http.StatusAccepted {
		t.Fatalf("detach: %s", r)
	}
	r = do(t, e.ts, http.MethodGet, computeBase+"/servers/"+server+"/os-instance-actions", aliceToken, "", nil)
	var names []string
	for _, a := range get(t, r.json(t), "instanceActions").([]any) {
		names = append(names, fmt.Sprint(a.(map[string]any)["action"], " ", a.(map[string]any)["message"]))
	}
	if got := fmt.Sprint(names); got != "[detach_interface <nil> attach_interface Error attach_interface <nil>]" &&
		got != "[detach_interface <nil> attach_interface Error attach_interface <nil> create <nil>]" {
		t.Errorf("instance actions %s", got)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
