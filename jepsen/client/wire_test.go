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
		{ServerAction{Stop: &Null{}}, `{"os-stop": null}`},
		{ServerAction{Start: &Null{}}, `{"os-start": null}`},
		{ServerAction{Reboot: &Reboot{Type: "HARD"}}, `{"reboot": {"type": "HARD"}}`},
		{ServerAction{Rebuild: &Rebuild{ImageRef: "img"}}, `{"rebuild": {"imageRef": "img"}}`},
		{CreateServerRequest{Server: NewServer{Name: "a", FlavorRef: "jepsen", ImageRef: "img"}},
			`{"server": {"name": "a", "flavorRef": "jepsen", "imageRef": "img"}}`},
		{CreateFlavorRequest{Flavor: Flavor{Name: "f", ID: "f", VCPUs: 1, RAM: 1, Disk: 1}},
			`{"flavor": {"name": "f", "id": "f", "vcpus": 1, "ram": 1, "disk": 1}}`},
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
