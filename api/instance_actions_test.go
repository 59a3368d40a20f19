package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/fsm"
)

// bareMetalEnv is cliKeystoneEnv with available Ironic nodes and the
// bare-metal flavor "bm" that places on them.
func bareMetalEnv(t *testing.T, nodes int) *keystoneEnv {
	t.Helper()
	e := cliKeystoneEnv(t)
	var upserts []fsm.Node
	for i := range nodes {
		upserts = append(upserts, fsm.Node{UUID: fmt.Sprintf("6fae68da-108b-4a9d-87c4-1000000000%02d", i),
			ResourceClass: "baremetal", ProvisionState: "available", PowerState: "power off"})
	}
	e.propose(&fsm.SyncNodes{Upserts: upserts})
	createFlavor(t, e.env, `{"flavor": {"name": "bm", "id": "bm", "ram": 1, "vcpus": 1, "disk": 1}}`)
	if r := do(t, e.ts, http.MethodPost, computeBase+"/flavors/bm/os-extra_specs", adminToken,
		`{"extra_specs": {"resources:CUSTOM_BAREMETAL": "1", "resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}}`, nil); r.code != http.StatusOK {
		t.Fatalf("extra specs: %s", r)
	}
	return e
}

// activate finishes a server's build as its owner would.
func activate(t *testing.T, e *keystoneEnv, id string) fsm.Server {
	t.Helper()
	s, err := e.peer.Node.Store().Server(id)
	if err != nil || s.Host == "" || s.ClaimedNode == "" {
		t.Fatalf("server %s not placed on a node: %+v %v", id, s, err)
	}
	e.propose(&fsm.ReserveNode{ServerID: id, Host: s.Host, Epoch: s.Epoch, NodeUUID: s.ClaimedNode, AllocationUUID: id})
	e.propose(&fsm.SetServerTask{ID: id, Host: s.Host, Epoch: s.Epoch, Status: fsm.StatusActive})
	return s
}

// bootActions boots a server as token and answers its id and the request
// id of the boot.
func bootActions(t *testing.T, e *keystoneEnv, token string) (string, string) {
	t.Helper()
	r := do(t, e.ts, http.MethodPost, computeBase+"/servers", token,
		`{"server": {"name": "acts", "imageRef": "http://img/a", "flavorRef": "bm", "networks": "none"}}`, nil)
	if r.code != http.StatusAccepted {
		t.Fatalf("boot: %s", r)
	}
	return get(t, r.json(t), "server", "id").(string), r.header.Get("X-Compute-Request-Id")
}

func actionsOf(t *testing.T, e *keystoneEnv, token, id, version string) []string {
	t.Helper()
	r := do(t, e.ts, http.MethodGet, computeBase+"/servers/"+id+"/os-instance-actions", token, "", mv(version))
	if r.code != http.StatusOK {
		t.Fatalf("list actions at %s: %s", version, r)
	}
	var names []string
	for _, a := range get(t, r.json(t), "instanceActions").([]any) {
		names = append(names, a.(map[string]any)["action"].(string))
	}
	return names
}

// Tempest's InstanceActionsTestJSON and InstanceActionsV221TestJSON: a
// server's create and reboot, newest first, the create found by the boot's
// request id; a deleted server's create and delete from 2.21.
func TestInstanceActionsListAndShow(t *testing.T) {
	e := bareMetalEnv(t, 1)
	id, rid := bootActions(t, e, memberA)
	s := activate(t, e, id)
	if r := do(t, e.ts, http.MethodPost, computeBase+"/servers/"+id+"/action", memberA, `{"reboot": {"type": "HARD"}}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("reboot: %s", r)
	}
	if got := strings.Join(actionsOf(t, e, memberA, id, "2.1"), " "); got != "reboot create" {
		t.Fatalf("actions %q, want reboot create", got)
	}
	r := do(t, e.ts, http.MethodGet, computeBase+"/servers/"+id+"/os-instance-actions/"+rid, memberA, "", nil)
	if r.code != http.StatusOK {
		t.Fatalf("show the create: %s", r)
	}
	a := get(t, r.json(t), "instanceAction").(map[string]any)
	if a["action"] != "create" || a["instance_uuid"] != id || a["request_id"] != rid || a["project_id"] != "demo-a" || a["user_id"] != "ann-id" {
		t.Fatalf("create action: %v", a)
	}
	if _, has := a["events"]; has {
		t.Errorf("a project's caller sees events before 2.51: %v", a)
	}
	for path, want := range map[string]string{
		"/servers/" + id + "/os-instance-actions/req-nope": "Action req-nope not found",
		"/servers/nope/os-instance-actions":                "Instance nope could not be found.",
	} {
		r := do(t, e.ts, http.MethodGet, computeBase+path, memberA, "", nil)
		if _, msg := errorMessage(t, r); r.code != http.StatusNotFound || msg != want {
			t.Errorf("GET %s: %s, want 404 %q", path, r, want)
		}
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/servers/"+id+"/os-instance-actions", memberB, "", nil); r.code != http.StatusNotFound {
		t.Errorf("another project lists the actions: %s", r)
	}

	// Deleted: its actions are read from 2.21.
	if r := do(t, e.ts, http.MethodDelete, computeBase+"/servers/"+id, memberA, "", nil); r.code != http.StatusNoContent {
		t.Fatalf("delete: %s", r)
	}
	e.propose(&fsm.ReleaseNode{ServerID: id, Host: s.Host, Epoch: s.Epoch, NodeUUID: s.ClaimedNode})
	e.propose(&fsm.SetServerTask{ID: id, Host: s.Host, Epoch: s.Epoch, Status: fsm.StatusDeleted})
	if r := do(t, e.ts, http.MethodGet, computeBase+"/servers/"+id+"/os-instance-actions", memberA, "", mv("2.20")); r.code != http.StatusNotFound {
		t.Errorf("a deleted server's actions at 2.20: %s, want 404", r)
	}
	if got := strings.Join(actionsOf(t, e, memberA, id, "2.21"), " "); got != "delete reboot create" {
		t.Fatalf("deleted server's actions %q", got)
	}
}

// Events: a project's caller sees them from 2.51, without traceback or
// host; an admin sees both (host from 2.62); hostId from 2.62 for all.
func TestInstanceActionEvents(t *testing.T) {
	e := bareMetalEnv(t, 1)
	id, rid := bootActions(t, e, memberA)
	s, _ := e.peer.Node.Store().Server(id)
	e.propose(&fsm.SetServerTask{ID: id, Host: s.Host, Epoch: s.Epoch, Status: fsm.StatusError,
		Fault: &fsm.Fault{Code: 500, Message: "deploy failed", Created: time.Now()}})
	show := func(token, version string) map[string]any {
		r := do(t, e.ts, http.MethodGet, computeBase+"/servers/"+id+"/os-instance-actions/"+rid, token, "", mv(version))
		if r.code != http.StatusOK {
			t.Fatalf("show at %s: %s", version, r)
		}
		return get(t, r.json(t), "instanceAction").(map[string]any)
	}
	a := show(memberA, "2.51")
	if a["message"] != "Error" {
		t.Errorf("failed create: message %v, want Error", a["message"])
	}
	ev := get(t, a, "events", 0).(map[string]any)
	if ev["event"] != "compute__do_build_and_run_instance" || ev["result"] != "Error" || ev["finish_time"] == nil {
		t.Errorf("event: %v", ev)
	}
	if _, has := ev["traceback"]; has {
		t.Errorf("a project's caller sees the traceback: %v", ev)
	}
	ev = get(t, show(memberA, "2.62"), "events", 0).(map[string]any)
	if _, has := ev["host"]; has || ev["hostId"] == "" {
		t.Errorf("project's event at 2.62: %v, want hostId and no host", ev)
	}
	ev = get(t, show(adminToken, "2.1"), "events", 0).(map[string]any)
	if ev["traceback"] != "deploy failed" {
		t.Errorf("admin's event at 2.1: %v, want the traceback", ev)
	}
	ev = get(t, show(adminToken, "2.62"), "events", 0).(map[string]any)
	if ev["host"] != s.Host || ev["hostId"] == "" {
		t.Errorf("admin's event at 2.62: %v, want host %s", ev, s.Host)
	}
}

// From 2.58: limit and marker page the list, newest first; a marker that
// names no action is a 400; changes-since narrows on updated_at.
func TestInstanceActionsPaging(t *testing.T) {
	e := bareMetalEnv(t, 1)
	id, _ := bootActions(t, e, memberA)
	for _, act := range []string{`{"lock": null}`, `{"unlock": null}`} {
		if r := do(t, e.ts, http.MethodPost, computeBase+"/servers/"+id+"/action", adminToken, act, nil); r.code != http.StatusAccepted {
			t.Fatalf("%s: %s", act, r)
		}
	}
	list := func(q string) response {
		return do(t, e.ts, http.MethodGet, computeBase+"/servers/"+id+"/os-instance-actions"+q, memberA, "", mv("2.58"))
	}
	r := list("?limit=2")
	body := r.json(t)
	acts := get(t, body, "instanceActions").([]any)
	if len(acts) != 2 || acts[0].(map[string]any)["action"] != "unlock" || body["links"] == nil {
		t.Fatalf("first page: %s", r)
	}
	marker := acts[1].(map[string]any)["request_id"].(string)
	r = list("?limit=2&marker=" + marker)
	acts = get(t, r.json(t), "instanceActions").([]any)
	if len(acts) != 1 || acts[0].(map[string]any)["action"] != "create" {
		t.Fatalf("second page: %s", r)
	}
	if r := list("?marker=req-nope"); r.code != http.StatusBadRequest {
		t.Errorf("unknown marker: %s, want 400", r)
	}
	if r := list("?changes-since=" + time.Now().UTC().Add(time.Hour).Format(time.RFC3339)); len(get(t, r.json(t), "instanceActions").([]any)) != 0 {
		t.Errorf("changes-since in the future: %s", r)
	}
	if r := list("?changes-since=yesterday"); r.code != http.StatusBadRequest {
		t.Errorf("bad changes-since: %s, want 400", r)
	}
	// Before 2.58 the parameters mean nothing.
	r = do(t, e.ts, http.MethodGet, computeBase+"/servers/"+id+"/os-instance-actions?limit=1", memberA, "", mv("2.57"))
	if n := len(get(t, r.json(t), "instanceActions").([]any)); n != 3 {
		t.Errorf("limit at 2.57: %d actions, want 3", n)
	}
}

// A change of owner is an action of its own, which Nova has no name for:
// "failover", its message the reason, its one event on the new owner.
func TestInstanceActionOfAFailover(t *testing.T) {
	e := bareMetalEnv(t, 1)
	id, _ := bootActions(t, e, memberA)
	s := activate(t, e, id)
	e.propose(&fsm.RegisterHost{Name: "p2", RaftAddr: "127.0.0.98:1", APIAddr: "127.0.0.98:2", Kind: fsm.KindIronic})
	e.propose(&fsm.ReassignServers{Reason: fsm.ReasonAdminMove, Moves: []fsm.Move{{ServerID: id, FromHost: s.Host, FromEpoch: s.Epoch, ToHost: "p2"}}})
	r := do(t, e.ts, http.MethodGet, computeBase+"/servers/"+id+"/os-instance-actions", memberA, "", nil)
	a := get(t, r.json(t), "instanceActions", 0).(map[string]any)
	want := "moved by an operator: from " + s.Host + " at epoch "
	if a["action"] != "failover" || !strings.HasPrefix(a["message"].(string), want) {
		t.Fatalf("latest action %v, want a failover with message %q…", a, want)
	}
	r = do(t, e.ts, http.MethodGet, computeBase+"/servers/"+id+"/os-instance-actions/"+a["request_id"].(string), adminToken, "", mv("2.62"))
	ev := get(t, r.json(t), "instanceAction", "events", 0).(map[string]any)
	if ev["event"] != "corral_reassign_owner" || ev["result"] != "Success" || ev["host"] != "p2" {
		t.Fatalf("failover event %v", ev)
	}
}

// A rebuild of a stopped server has two events, the stop after the
// redeploy the newer, listed first as Nova lists events (newest first).
func TestInstanceActionOfARebuildOfAStoppedServer(t *testing.T) {
	e := bareMetalEnv(t, 1)
	id, _ := bootActions(t, e, memberA)
	s := activate(t, e, id)
	e.propose(&fsm.RequestServerAction{ID: id, Kind: fsm.ActionStop})
	e.propose(&fsm.FinishServerAction{ID: id, Host: s.Host, Epoch: s.Epoch, Kind: fsm.ActionStop})
	r := do(t, e.ts, http.MethodPost, computeBase+"/servers/"+id+"/action", memberA, `{"rebuild": {"imageRef": "http://img/b"}}`, nil)
	if r.code != http.StatusAccepted {
		t.Fatalf("rebuild: %s", r)
	}
	rid := r.header.Get("X-Compute-Request-Id")
	cur, _ := e.peer.Node.Store().Server(id)
	e.propose(&fsm.StopAfterRebuild{ID: id, Host: s.Host, Epoch: s.Epoch, RequestedAt: cur.Action.RequestedAt})
	e.propose(&fsm.FinishServerAction{ID: id, Host: s.Host, Epoch: s.Epoch, Kind: fsm.ActionRebuildStop})
	r = do(t, e.ts, http.MethodGet, computeBase+"/servers/"+id+"/os-instance-actions/"+rid, memberA, "", mv("2.51"))
	var events []string
	for _, ev := range get(t, r.json(t), "instanceAction", "events").([]any) {
		events = append(events, ev.(map[string]any)["event"].(string))
	}
	if got := strings.Join(events, " "); got != "compute_stop_instance compute_rebuild_instance" {
		t.Fatalf("rebuild's events %q, want the stop first", got)
	}
	r = do(t, e.ts, http.MethodGet, computeBase+"/servers/"+id, memberA, "", nil)
	if srv := get(t, r.json(t), "server").(map[string]any); srv["status"] != "SHUTOFF" || srv["OS-EXT-STS:task_state"] != nil {
		t.Fatalf("server after the rebuild: %v %v", srv["status"], srv["OS-EXT-STS:task_state"])
	}
}
