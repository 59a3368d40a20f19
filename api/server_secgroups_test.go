package api_test

import (
	"context"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/wire"
)

// A server's security groups with [neutron], as Nova keeps them in
// Neutron: the view lists each port's groups by name (omitted when none),
// os-security-groups shows them from Neutron in Nova's shape; a boot's
// groups are resolved in its project (unknown: 400, ambiguous: 409) and
// kept for its ports; addSecurityGroup and removeSecurityGroup resolve
// the group in the server's project (404 unknown, 409 ambiguous, Nova's
// 400 for a malformed body), are committed and carried out by the owner
// (played here by the test), and answer once it is done (202, or the
// owner's 404 "not associated"), so that a show right after sees the
// change; a refused request changes nothing; no instance action is kept.
func TestServerSecurityGroups(t *testing.T) {
	const (
		server = "a1b2c3d4-0000-4000-8000-0000000000e1"
		node   = "6fae68da-108b-4a9d-87c4-0000000000e1"
		netA   = "0a000000-0000-4000-8000-0000000000a1"
		p1     = "0b000000-0000-4000-8000-0000000000e1"
		p2     = "0b000000-0000-4000-8000-0000000000e2"
		sgDef  = "5e000000-0000-4000-8000-000000000001"
		sgWeb  = "5e000000-0000-4000-8000-000000000002"
		sgDup1 = "5e000000-0000-4000-8000-000000000003"
		sgDup2 = "5e000000-0000-4000-8000-000000000004"
		sgBob  = "5e000000-0000-4000-8000-000000000005"
	)
	ssh := 22
	nt := &lockedNetworks{fakeNetworks: fakeNetworks{
		nets: map[string]neutron.Network{netA: {ID: netA, Name: "provider", Shared: true}},
		ports: map[string]neutron.Port{
			p1: {ID: p1, NetworkID: netA, ProjectID: "demo-a", DeviceID: server},
			p2: {ID: p2, NetworkID: netA, ProjectID: "demo-a", DeviceID: server},
		},
		groups: []neutron.SecurityGroup{
			{ID: sgDef, Name: "default", ProjectID: "demo-a", Description: "Default security group", Rules: []neutron.SecurityGroupRule{
				{ID: "r1", SecurityGroupID: sgDef, Direction: "ingress", EtherType: "IPv4", RemoteGroupID: sgDef},
				{ID: "r2", SecurityGroupID: sgDef, Direction: "egress", EtherType: "IPv4"},
				{ID: "r3", SecurityGroupID: sgDef, Direction: "ingress", EtherType: "IPv4", Protocol: "tcp", PortRangeMin: &ssh, PortRangeMax: &ssh,
					RemoteIPPrefix: "192.0.2.0/24"},
				{ID: "r4", SecurityGroupID: sgDef, Direction: "ingress", EtherType: "IPv4", Protocol: "icmp"},
			}},
			{ID: sgWeb, Name: "web", ProjectID: "demo-a", Description: "web"},
			{ID: sgDup1, Name: "dup", ProjectID: "demo-a"},
			{ID: sgDup2, Name: "dup", ProjectID: "demo-a"},
			{ID: sgBob, Name: "bobs", ProjectID: "demo-b"},
		},
	}}
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
	def := []fsm.SecurityGroupRef{{ID: sgDef, Name: "default"}}
	for _, p := range []string{p1, p2} {
		e.propose(&fsm.RecordServerPort{ID: server, Host: s.Host, Epoch: s.Epoch, Port: fsm.ServerPort{ID: p, NetworkID: netA,
			SecurityGroups: def, GroupsKnown: true}})
	}
	serverPath := computeBase + "/servers/" + server
	groupsShown := func() any {
		t.Helper()
		r := do(t, e.ts, http.MethodGet, serverPath, aliceToken, "", nil)
		if r.code != http.StatusOK {
			t.Fatalf("show: %s", r)
		}
		return r.json(t)["server"].(map[string]any)["security_groups"]
	}
	if got, want := jsonOf(t, groupsShown()), `[{"name":"default"},{"name":"default"}]`; got != want {
		t.Fatalf("security_groups %s, want %s (one per port, as Nova)", got, want)
	}
	r := do(t, e.ts, http.MethodGet, serverPath+"/os-security-groups", carolToken, "", nil)
	want := `[{"description":"Default security group","id":"` + sgDef + `","name":"default","rules":[` +
		`{"from_port":null,"group":{"name":"default","tenant_id":"demo-a"},"id":"r1","ip_protocol":null,"ip_range":{},"parent_group_id":"` + sgDef + `","to_port":null},` +
		`{"from_port":22,"group":{},"id":"r3","ip_protocol":"tcp","ip_range":{"cidr":"192.0.2.0/24"},"parent_group_id":"` + sgDef + `","to_port":22},` +
		`{"from_port":-1,"group":{},"id":"r4","ip_protocol":"icmp","ip_range":{"cidr":"0.0.0.0/0"},"parent_group_id":"` + sgDef + `","to_port":-1}],` +
		`"tenant_id":"demo-a"}]`
	if got := jsonOf(t, get(t, r.json(t), "security_groups")); r.code != http.StatusOK || got != want {
		t.Fatalf("os-security-groups: %s\nwant %s", r, want)
	}

	// The owner, played: each request done at once on both ports.
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
			if req := store.ServerNet(server).SecurityGroup; req != nil && !req.Done {
				fin := &fsm.FinishSecurityGroupAction{ID: server, Host: s.Host, Epoch: s.Epoch, Kind: req.Kind, RequestedAt: req.RequestedAt}
				found := false
				for _, p := range store.ServerNet(server).Ports {
					groups := slices.DeleteFunc(slices.Clone(p.SecurityGroups), func(g fsm.SecurityGroupRef) bool { return g.ID == req.Group.ID })
					found = found || len(groups) != len(p.SecurityGroups)
					if req.Kind == fsm.ActionAddSecurityGroup {
						groups = append(groups, req.Group)
					}
					fin.Ports = append(fin.Ports, fsm.PortSecurityGroups{PortID: p.ID, Groups: groups})
				}
				if req.Kind == fsm.ActionRemoveSecurityGroup && !found {
					fin.Ports, fin.Code, fin.Fault = nil, 404, "Security group "+req.Group.Name+" not associated with the instance "+server
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

	history := jsonOf(t, get(t, do(t, e.ts, http.MethodGet, serverPath+"/os-instance-actions", aliceToken, "", nil).json(t), "instanceActions"))
	action := serverPath + "/action"
	before := e.digest()
	for _, c := range []struct {
		name, token, body string
		code              int
		msg               string
	}{
		{"a reader adds", carolToken, `{"addSecurityGroup": {"name": "web"}}`, 403, ""},
		{"another project's member", bobToken, `{"addSecurityGroup": {"name": "web"}}`, 404, "Instance " + server + " could not be found."},
		{"an unknown group", aliceToken, `{"addSecurityGroup": {"name": "nope"}}`, 404, "Security group nope is not found for project demo-a"},
		{"another project's group by id", aliceToken, `{"addSecurityGroup": {"name": "` + sgBob + `"}}`, 404, "Security group " + sgBob + " is not found for project demo-a"},
		{"an ambiguous name", aliceToken, `{"addSecurityGroup": {"name": "dup"}}`, 409, "Multiple security_group matches found for name 'dup', use an ID to be more specific."},
		{"no name", aliceToken, `{"addSecurityGroup": {}}`, 400, "Security group not specified"},
		{"not a dict", aliceToken, `{"removeSecurityGroup": "web"}`, 400, "Missing parameter dict"},
		{"a blank name", aliceToken, `{"addSecurityGroup": {"name": "  "}}`, 400, "Security group name cannot be empty"},
	} {
		r := do(t, e.ts, http.MethodPost, action, c.token, c.body, nil)
		if r.code != c.code {
			t.Errorf("%s: %s, want %d", c.name, r, c.code)
			continue
		}
		if _, msg := errorMessage(t, r); c.msg != "" && msg != c.msg {
			t.Errorf("%s: %q, want %q", c.name, msg, c.msg)
		}
	}
	if e.digest() != before {
		t.Fatal("a refused security group request changed the state")
	}
	// A name is looked up by id only when it is a UUID, as neutronclient's
	// find_resourceid_by_name_or_id does: "nope" and "dup" were not.
	nt.mu.Lock()
	for _, id := range nt.groupIDsAsked {
		if uuid.Validate(id) != nil {
			t.Errorf("Neutron asked for the security group of id %q: only a UUID is looked up by id", id)
		}
	}
	nt.mu.Unlock()

	if r := do(t, e.ts, http.MethodPost, action, aliceToken, `{"addSecurityGroup": {"name": "web"}}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("add: %s", r)
	}
	if got, want := jsonOf(t, groupsShown()), `[{"name":"default"},{"name":"web"},{"name":"default"},{"name":"web"}]`; got != want {
		t.Fatalf("after the add: %s, want %s", got, want)
	}
	if r := do(t, e.ts, http.MethodPost, action, aliceToken, `{"removeSecurityGroup": {"name": "`+sgWeb+`"}}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("remove by id: %s", r)
	}
	r = do(t, e.ts, http.MethodPost, action, aliceToken, `{"removeSecurityGroup": {"name": "web"}}`, nil)
	if _, msg := errorMessage(t, r); r.code != http.StatusNotFound || msg != "Security group web not associated with the instance "+server {
		t.Fatalf("a second remove: %s", r)
	}
	if r := do(t, e.ts, http.MethodPost, action, aliceToken, `{"removeSecurityGroup": {"name": "default"}}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("remove of the last group: %s", r)
	}
	if got := groupsShown(); got != nil {
		t.Fatalf("security_groups %v of a server whose ports have none: want the field omitted, as Nova", got)
	}
	r = do(t, e.ts, http.MethodGet, serverPath+"/os-security-groups", aliceToken, "", nil)
	if got := jsonOf(t, get(t, r.json(t), "security_groups")); r.code != http.StatusOK || got != "[]" {
		t.Fatalf("os-security-groups of a server without groups: %s", r)
	}
	after := jsonOf(t, get(t, do(t, e.ts, http.MethodGet, serverPath+"/os-instance-actions", aliceToken, "", nil).json(t), "instanceActions"))
	if after != history {
		t.Fatalf("instance actions %s, want %s: Nova keeps none of security groups", after, history)
	}

	// A boot's groups: resolved in the caller's project, kept for its ports.
	createFlavor(t, e.env, `{"flavor": {"name": "f", "id": "f", "ram": 1, "vcpus": 1, "disk": 1}}`)
	boot := func(groups string) response {
		return do(t, e.ts, http.MethodPost, computeBase+"/servers", aliceToken,
			`{"server": {"name": "a", "imageRef": "img", "flavorRef": "f", "networks": [{"uuid": "`+netA+`"}], "security_groups": `+groups+`}}`, nil)
	}
	for _, c := range []struct {
		groups string
		code   int
		msg    string
	}{
		{`[{"name": "nope"}]`, 400, "Unable to find security_group with name or id 'nope'"},
		{`[{"name": "` + sgBob + `"}]`, 400, "Unable to find security_group with name or id '" + sgBob + "'"},
		{`[{"name": "dup"}]`, 409, "Multiple security_group matches found for name 'dup', use an ID to be more specific."},
	} {
		before := e.digest()
		r := boot(c.groups)
		if _, msg := errorMessage(t, r); r.code != c.code || msg != c.msg {
			t.Errorf("boot in %s: %s, want %d %q", c.groups, r, c.code, c.msg)
		}
		if e.digest() != before {
			t.Errorf("boot in %s: the refused boot changed the state", c.groups)
		}
	}
	r = boot(`[{"name": "web"}, {"name": "` + sgDef + `"}, {"name": "web"}]`)
	if r.code != http.StatusAccepted {
		t.Fatalf("boot in web and default: %s", r)
	}
	if got, want := jsonOf(t, get(t, r.json(t), "server", "security_groups")), `[{"name":"web"},{"name":"`+sgDef+`"},{"name":"web"}]`; got != want {
		t.Errorf("the create's security_groups %s, want the request's %s", got, want)
	}
	id := get(t, r.json(t), "server", "id").(string)
	if got, want := e.peer.Node.Store().ServerNet(id).Requested, []fsm.SecurityGroupRef{{ID: sgWeb, Name: "web"}, {ID: sgDef, Name: "default"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("kept groups %+v, want %+v", got, want)
	}
	r = boot(`[{"name": "default"}]`)
	id = get(t, r.json(t), "server", "id").(string)
	if r.code != http.StatusAccepted || len(e.peer.Node.Store().ServerNet(id).Requested) != 0 {
		t.Errorf("boot in default alone: %s, kept %+v; want Neutron's default (nothing kept)", r, e.peer.Node.Store().ServerNet(id).Requested)
	}
}

// Without [neutron] the one security group of every server is the
// nominal "default": no action changes it, and os-security-groups is
// Nova's 501 without a network API.
func TestServerSecurityGroupsWithoutNeutron(t *testing.T) {
	e, _, _ := hypervisorEnv(t)
	r := do(t, e.ts, http.MethodGet, computeBase+"/servers/"+adoptedID, adminToken, "", nil)
	if got := jsonOf(t, get(t, r.json(t), "server", "security_groups")); got != `[{"name":"default"}]` {
		t.Fatalf("security_groups %s", got)
	}
	r = do(t, e.ts, http.MethodPost, computeBase+"/servers/"+adoptedID+"/action", adminToken, `{"addSecurityGroup": {"name": "default"}}`, nil)
	if _, msg := errorMessage(t, r); r.code != http.StatusBadRequest || msg != "There is no such action: addSecurityGroup" {
		t.Fatalf("add without [neutron]: %s", r)
	}
	r = do(t, e.ts, http.MethodGet, computeBase+"/servers/"+adoptedID+"/os-security-groups", adminToken, "", nil)
	if r.code != http.StatusNotImplemented {
		t.Fatalf("os-security-groups without [neutron]: %s", r)
	}
}
