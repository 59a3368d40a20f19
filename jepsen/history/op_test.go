package history

import (
	"encoding/json"
	"testing"

	"github.com/corral-dev/corral/jepsen/client"
)

// A read records what corral's server view showed: a task state, host or
// node shown as null, or not shown at all (a token whose policy hides
// the host), is "", as an empty one is.
func TestStateOfServerView(t *testing.T) {
	for _, tc := range []struct {
		name, view string
		want       ServerState
	}{
		{"nulls", `{"id": "a", "name": "n", "status": "BUILD", "OS-EXT-STS:task_state": null,
			"OS-EXT-SRV-ATTR:host": null, "OS-EXT-SRV-ATTR:hypervisor_hostname": null}`,
			ServerState{ID: "a", Name: "n", Status: "BUILD"}},
		{"absent", `{"id": "a", "name": "n", "status": "ACTIVE"}`,
			ServerState{ID: "a", Name: "n", Status: "ACTIVE"}},
		{"empty", `{"id": "a", "name": "n", "status": "ACTIVE", "OS-EXT-STS:task_state": "",
			"OS-EXT-SRV-ATTR:host": "", "OS-EXT-SRV-ATTR:hypervisor_hostname": ""}`,
			ServerState{ID: "a", Name: "n", Status: "ACTIVE"}},
		{"set", `{"id": "a", "name": "n", "status": "ACTIVE", "OS-EXT-STS:task_state": "deleting",
			"OS-EXT-SRV-ATTR:host": "n2", "OS-EXT-SRV-ATTR:hypervisor_hostname": "node-1"}`,
			ServerState{ID: "a", Name: "n", Status: "ACTIVE", Task: "deleting", Host: "n2", Node: "node-1"}},
		// The whole view as corral renders it at the default microversion
		// (what the suite asks for): every field decodes.
		{"full view", `{"id": "a", "name": "n", "status": "ERROR", "tenant_id": "p", "user_id": "u",
			"created": "2026-12-01T10:00:00Z", "updated": "2026-12-01T10:00:01Z", "hostId": "", "progress": 0,
			"accessIPv4": "", "accessIPv6": "", "addresses": {}, "metadata": {}, "key_name": null, "config_drive": "",
			"links": [{"rel": "self", "href": "http://x/compute/v2.1/servers/a"}],
			"image": {"id": "img", "links": [{"rel": "bookmark", "href": "http://x/images/img"}]},
			"flavor": {"id": "jepsen", "links": [{"rel": "bookmark", "href": "http://x/compute/flavors/jepsen"}]},
			"OS-EXT-STS:task_state": null, "OS-EXT-STS:vm_state": "error", "OS-EXT-STS:power_state": 0,
			"OS-EXT-SRV-ATTR:host": null, "OS-EXT-SRV-ATTR:hypervisor_hostname": null,
			"OS-EXT-SRV-ATTR:instance_name": "instance-a", "OS-EXT-AZ:availability_zone": "nova",
			"OS-DCF:diskConfig": "MANUAL", "security_groups": [{"name": "default"}],
			"os-extended-volumes:volumes_attached": [], "locked": false,
			"fault": {"code": 500, "message": "No valid host was found", "created": "2026-12-01T10:00:01Z"}}`,
			ServerState{ID: "a", Name: "n", Status: "ERROR", Fault: "No valid host was found"}},
	} {
		var body client.ServerResponse
		if err := json.Unmarshal([]byte(`{"server": `+tc.view+`}`), &body); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := StateOf(body.Server); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
