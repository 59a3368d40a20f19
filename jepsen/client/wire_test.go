package client

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The request bodies say what Nova's documentation spells: an action
// without arguments is null, exactly one action per body.
func TestRequestBodies(t *testing.T) {
	for _, tc := range []struct {
		body any
		want string
	}{
		{Action(ActionStop, nil), `{"os-stop": null}`},
		{Action(ActionStart, nil), `{"os-start": null}`},
		{Action(ActionReboot, RebootAction{Type: RebootHard}), `{"reboot": {"type": "HARD"}}`},
		{Action(ActionReboot, RebootAction{Type: RebootSoft}), `{"reboot": {"type": "SOFT"}}`},
		{Action(ActionRebuild, RebuildAction{ImageRef: "img"}), `{"rebuild": {"imageRef": "img"}}`},
		{ServerCreateRequest{Server: &ServerCreate{Name: "a", FlavorRef: "jepsen", ImageRef: "img"}},
			`{"server": {"name": "a", "flavorRef": "jepsen", "imageRef": "img"}}`},
		{NewFlavor("f"), `{"flavor": {"name": "f", "id": "f", "vcpus": 1, "ram": 1, "disk": 1}}`},
		{ExtraSpecsBody{ExtraSpecs: map[string]string{"resources:VCPU": "0"}}, `{"extra_specs": {"resources:VCPU": "0"}}`},
		{KeyringRequest{Key: "K"}, `{"key": "K"}`},
	} {
		b, err := json.Marshal(tc.body)
		if err != nil {
			t.Fatal(err)
		}
		var got, want any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%T = %s, want %s", tc.body, b, tc.want)
		}
	}
}

// The paths are the ones the suite has always sent its requests to.
func TestPaths(t *testing.T) {
	for _, p := range []struct{ got, want string }{
		{ServersPath, "/compute/v2.1/servers"},
		{ServersDetailPath, "/compute/v2.1/servers/detail"},
		{ServerPath("a/b"), "/compute/v2.1/servers/a%2Fb"},
		{ServerActionPath("a"), "/compute/v2.1/servers/a/action"},
		{FlavorsPath, "/compute/v2.1/flavors"},
		{ExtraSpecsPath("jepsen"), "/compute/v2.1/flavors/jepsen/os-extra_specs"},
		{RaftPath, "/v1/cluster/raft"},
		{HostsPath, "/v1/hosts"},
		{NodesPath, "/v1/nodes"},
		{ReservationsPath, "/v1/reservations"},
		{OwnerPath("a"), "/v1/servers/a/owner"},
		{KeyringPath, "/v1/operator/keyring"},
	} {
		if p.got != p.want {
			t.Errorf("%s, want %s", p.got, p.want)
		}
	}
}
