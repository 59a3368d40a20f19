package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/corral-dev/corral/fsm"
)

// os-resetState as Tempest's admin tests take it: a server reset to
// error is listed by status=error, deleted, and rebuilt to ACTIVE.
func TestResetState(t *testing.T) {
	e := bareMetalEnv(t, 2)
	id, _ := bootActions(t, e, memberA)
	s := activate(t, e, id)
	path := computeBase + "/servers/" + id
	act := path + "/action"
	show := func() map[string]any {
		t.Helper()
		return get(t, do(t, e.ts, http.MethodGet, path, adminToken, "", nil).json(t), "server").(map[string]any)
	}

	before := e.digest()
	for body, want := range map[string]string{
		`{"os-resetState": {"state": "shutoff"}}`:          "Invalid input for field/attribute state. Value: shutoff. 'shutoff' is not one of ['active', 'error']",
		`{"os-resetState": {"state": "ERROR"}}`:            "'ERROR' is not one of ['active', 'error']",
		`{"os-resetState": {"state": 1}}`:                  "1 is not of type 'string'",
		`{"os-resetState": {}}`:                            "'state' is a required property",
		`{"os-resetState": null}`:                          "is not of type 'object'",
		`{"os-resetState": {"state": "error", "x": true}}`: "Additional properties are not allowed ('x' was unexpected)",
	} {
		r := do(t, e.ts, http.MethodPost, act, adminToken, body, nil)
		if msg, _ := get(t, r.json(t), "badRequest", "message").(string); r.code != http.StatusBadRequest || !strings.Contains(msg, want) {
			t.Errorf("POST %s: %s, want 400 %q", body, r, want)
		}
	}
	if r := do(t, e.ts, http.MethodPost, act, memberA, `{"os-resetState": {"state": "error"}}`, nil); r.code != http.StatusForbidden ||
		get(t, r.json(t), "forbidden", "message") != "Policy doesn't allow os_compute_api:os-admin-actions:reset_state to be performed." {
		t.Errorf("the project resets its server: %s", r)
	}
	if r := do(t, e.ts, http.MethodPost, act, memberB, `{"os-resetState": {"state": "error"}}`, nil); r.code != http.StatusNotFound {
		t.Errorf("another project resets the server: %s", r)
	}
	if e.digest() != before {
		t.Fatal("refused resets changed the state")
	}

	if r := do(t, e.ts, http.MethodPost, act, adminToken, `{"os-resetState": {"state": "error"}}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("reset to error: %s", r)
	}
	if v := show(); v["status"] != "ERROR" || v["OS-EXT-STS:task_state"] != nil || v["OS-EXT-STS:vm_state"] != "error" {
		t.Fatalf("reset server: %v", v)
	}
	list := get(t, do(t, e.ts, http.MethodGet, computeBase+"/servers?status=error", memberA, "", nil).json(t), "servers").([]any)
	if len(list) != 1 || get(t, list[0], "id") != id {
		t.Fatalf("status=error lists %v", list)
	}

	// A rebuild of a server in ERROR, which answers and shows the new image.
	r := do(t, e.ts, http.MethodPost, act, memberA, `{"rebuild": {"imageRef": "http://img/b"}}`, nil)
	if r.code != http.StatusAccepted || get(t, r.json(t), "server", "image", "id") != "http://img/b" {
		t.Fatalf("rebuild from ERROR: %s", r)
	}
	if v := show(); v["status"] != "REBUILD" || get(t, v, "image", "id") != "http://img/b" {
		t.Fatalf("rebuilding: %v", v)
	}
	e.propose(&fsm.FinishServerAction{ID: id, Host: s.Host, Epoch: s.Epoch, Kind: fsm.ActionRebuild})
	if v := show(); v["status"] != "ACTIVE" || get(t, v, "image", "id") != "http://img/b" {
		t.Fatalf("rebuilt: %v", v)
	}

	if r := do(t, e.ts, http.MethodPost, act, adminToken, `{"os-resetState": {"state": "active"}}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("reset to active: %s", r)
	}
	if v := show(); v["status"] != "ACTIVE" || v["OS-EXT-STS:task_state"] != nil {
		t.Fatalf("reset to active: %v", v)
	}
	if got := strings.Join(actionsOf(t, e, adminToken, id, "2.1"), " "); !strings.Contains(got, "resetState") {
		t.Errorf("instance actions: %s", got)
	}
	if r := do(t, e.ts, http.MethodPost, act, adminToken, `{"os-resetState": {"state": "error"}}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("reset to error: %s", r)
	}
	if r := do(t, e.ts, http.MethodDelete, path, memberA, "", nil); r.code != http.StatusNoContent {
		t.Fatalf("delete of a server in ERROR: %s", r)
	}
	if v := show(); v["OS-EXT-STS:task_state"] != fsm.TaskDeleting {
		t.Fatalf("deleting: %v", v)
	}
}
