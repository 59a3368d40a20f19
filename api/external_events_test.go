package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/corral-dev/corral/fsm"
)

const (
	serviceToken = "gAAAAA-neutron-service-role"
	neutronAdmin = "gAAAAA-neutron-admin-in-service"
	eventsPath   = computeBase + "/os-server-external-events"
	unknownUUID  = "7b0a5ad4-3c2e-4b6a-9f1e-000000000404"
)

func eventsBody(events ...string) string {
	return `{"events": [` + strings.Join(events, ", ") + `]}`
}

// As Nova's os-server-external-events: each event answered on its own
// (200 completed for a server with a host, 404 for an unknown one, 422 for
// one without a host), the whole 200 when all were accepted and 207
// otherwise, even when none was (Nova since bug 1855752), the events sent
// back with their code and status. The accepted events are events of the
// server's current action in os-instance-actions.
func TestServerExternalEvents(t *testing.T) {
	e := bareMetalEnv(t, 1)
	e.ks.issue(serviceToken, "neutron", "service", "service")
	e.ks.issue(neutronAdmin, "neutron", "service", "admin")
	id, rid := bootActions(t, e, memberA)
	s := activate(t, e, id)
	noHost, _ := bootActions(t, e, memberA) // the one node is taken: ERROR, no host
	if v, err := e.peer.Node.Store().Server(noHost); err != nil || v.Host != "" {
		t.Fatalf("second server %+v %v: want one without a host", v, err)
	}

	r := do(t, e.ts, http.MethodPost, eventsPath, neutronAdmin, eventsBody(
		`{"name": "network-vif-plugged", "server_uuid": "`+id+`", "tag": "port-1", "status": "completed"}`,
		`{"name": "network-changed", "server_uuid": "`+unknownUUID+`"}`,
		`{"name": "network-changed", "server_uuid": "`+noHost+`", "tag": "port-2"}`), nil)
	if r.code != http.StatusMultiStatus {
		t.Fatalf("mixed events: %s, want 207", r)
	}
	var got struct {
		Events []map[string]any `json:"events"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"name": "network-vif-plugged", "server_uuid": id, "tag": "port-1", "status": "completed", "code": 200.0},
		{"name": "network-changed", "server_uuid": unknownUUID, "status": "failed", "code": 404.0},
		{"name": "network-changed", "server_uuid": noHost, "tag": "port-2", "status": "failed", "code": 422.0},
	}
	if !reflect.DeepEqual(got.Events, want) {
		t.Fatalf("events answered\n %v\nwant\n %v", got.Events, want)
	}
	// All accepted: 200; a service-role token may send them too.
	r = do(t, e.ts, http.MethodPost, eventsPath, serviceToken, eventsBody(
		`{"name": "network-changed", "server_uuid": "`+id+`", "tag": "port-1"}`), nil)
	if r.code != http.StatusOK || get(t, r.json(t), "events", 0, "status") != "completed" {
		t.Fatalf("an accepted event from the service role: %s", r)
	}
	// None accepted: 207, not 404.
	r = do(t, e.ts, http.MethodPost, eventsPath, adminToken, eventsBody(
		`{"name": "network-vif-deleted", "server_uuid": "`+unknownUUID+`", "tag": "p"}`), nil)
	if r.code != http.StatusMultiStatus || get(t, r.json(t), "events", 0, "code") != 404.0 {
		t.Fatalf("no event accepted: %s, want 207 with a 404", r)
	}

	// The server's create shows them, after the build's event.
	r = do(t, e.ts, http.MethodGet, computeBase+"/servers/"+id+"/os-instance-actions/"+rid, memberA, "", mv("2.62"))
	if r.code != http.StatusOK {
		t.Fatalf("show create: %s", r)
	}
	var names []string
	for _, ev := range get(t, r.json(t), "instanceAction", "events").([]any) {
		m := ev.(map[string]any)
		names = append(names, fmt.Sprint(m["event"], " ", m["result"]))
		if m["event"] != "compute__do_build_and_run_instance" && (m["finish_time"] == nil || m["hostId"] == "") {
			t.Errorf("external event %v: no finish time or hostId", m)
		}
	}
	// Newest first, as Nova lists an action's events.
	if w := []string{"network-changed Success", "network-vif-plugged Success", "compute__do_build_and_run_instance Success"}; !reflect.DeepEqual(names, w) {
		t.Fatalf("events of the create %q, want %q", names, w)
	}
	if s.Host == "" {
		t.Fatal("the server has no owner")
	}
}

// Only admins and Keystone's service role may send events (Nova's
// service_or_admin); the body is held to Nova's schema of the request's
// microversion; a volume-extended or power-update without its tag is
// that event's 400. Refused requests change nothing.
func TestServerExternalEventsPolicyAndSchema(t *testing.T) {
	e := bareMetalEnv(t, 1)
	e.ks.issue(serviceToken, "neutron", "service", "service")
	id, _ := bootActions(t, e, memberA)
	activate(t, e, id)
	ok := `{"name": "network-changed", "server_uuid": "` + id + `"}`
	before := e.digest()
	for _, tok := range []string{memberA, readerToken} {
		if r := do(t, e.ts, http.MethodPost, eventsPath, tok, eventsBody(ok), nil); r.code != http.StatusForbidden {
			t.Errorf("token %s: %s, want 403", tok, r)
		}
	}
	for _, tc := range []struct{ version, body, want string }{
		{"2.1", `{}`, "'events' is a required property"},
		{"2.1", `{"events": [], "x": 1}`, "Additional properties are not allowed ('x' was unexpected)"},
		{"2.1", `{"events": []}`, "[] is too short"},
		{"2.1", `{"events": {}}`, "is not of type 'array'"},
		{"2.1", eventsBody(`"e"`), "is not of type 'object'"},
		{"2.1", eventsBody(`{"server_uuid": "` + id + `"}`), "'name' is a required property"},
		{"2.1", eventsBody(`{"name": "network-changed"}`), "'server_uuid' is a required property"},
		{"2.1", eventsBody(`{"name": "network-changed", "server_uuid": "` + id + `", "x": 1}`), "('x' was unexpected)"},
		{"2.1", eventsBody(`{"name": "network-moved", "server_uuid": "` + id + `"}`),
			"'network-moved' is not one of ['network-changed', 'network-vif-plugged', 'network-vif-unplugged', 'network-vif-deleted']"},
		{"2.50", eventsBody(`{"name": "volume-extended", "server_uuid": "` + id + `", "tag": "v"}`), "'volume-extended' is not one of"},
		{"2.75", eventsBody(`{"name": "power-update", "server_uuid": "` + id + `", "tag": "POWER_ON"}`), "'power-update' is not one of"},
		{"2.1", eventsBody(`{"name": "network-changed", "server_uuid": "not-a-uuid"}`), "'not-a-uuid' is not a 'uuid'"},
		{"2.1", eventsBody(`{"name": "network-changed", "server_uuid": "` + id + `", "status": "done"}`),
			"'done' is not one of ['failed', 'completed', 'in-progress']"},
		{"2.1", eventsBody(`{"name": "network-changed", "server_uuid": "` + id + `", "tag": "` + strings.Repeat("t", 256) + `"}`), "is too long"},
		{"2.1", eventsBody(`{"name": "network-changed", "server_uuid": "` + id + `", "tag": 5}`), "5 is not of type 'string'"},
	} {
		r := do(t, e.ts, http.MethodPost, eventsPath, serviceToken, tc.body, mv(tc.version))
		if r.code != http.StatusBadRequest || !strings.Contains(string(r.body), tc.want) {
			t.Errorf("%s at %s: %s, want 400 %q", tc.body, tc.version, r, tc.want)
		}
	}
	if e.digest() != before {
		t.Fatal("refused requests changed the state")
	}
	// From their microversions, with their tag; without it, that event's 400.
	r := do(t, e.ts, http.MethodPost, eventsPath, serviceToken, eventsBody(
		`{"name": "volume-extended", "server_uuid": "`+id+`", "tag": "vol-1"}`,
		`{"name": "power-update", "server_uuid": "`+id+`", "tag": "POWER_OFF"}`,
		`{"name": "power-update", "server_uuid": "`+id+`"}`), mv("2.76"))
	if r.code != http.StatusMultiStatus {
		t.Fatalf("tagged events at 2.76: %s, want 207", r)
	}
	for i, want := range []float64{200, 200, 400} {
		if code := get(t, r.json(t), "events", i, "code"); code != want {
			t.Errorf("event %d: code %v, want %v", i, code, want)
		}
	}
	acts := e.peer.Node.Store().InstanceActions(id)
	var evs []string
	for _, ev := range acts[len(acts)-1].Events {
		evs = append(evs, ev.Event)
	}
	if w := []string{"compute__do_build_and_run_instance", fsm.ExternalVolumeExtended, fsm.ExternalPowerUpdate}; !reflect.DeepEqual(evs, w) {
		t.Errorf("events of the current action %q, want %q", evs, w)
	}
}
