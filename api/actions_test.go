package api_test

import (
	"net/http"
	"testing"

	"github.com/corral-dev/corral/fsm"
)

const adoptedID = "a1b2c3d4-0000-4000-8000-000000000001"

func TestServerActionsCommitIntents(t *testing.T) {
	e, _, _ := hypervisorEnv(t)
	act := computeBase + "/servers/" + adoptedID + "/action"
	show := func() map[string]any {
		return get(t, do(t, e.ts, http.MethodGet, computeBase+"/servers/"+adoptedID, adminToken, "", mv("2.9")).json(t), "server").(map[string]any)
	}
	if v := show(); v["OS-EXT-STS:power_state"] != float64(1) || v["locked"] != false {
		t.Fatalf("active server: %v", v)
	}
	before := e.digest()
	for body, code := range map[string]int{
		`{"reboot": {"type": "WARM"}}`:                    http.StatusBadRequest,
		`{"resize": {"flavorRef": "x"}}`:                  http.StatusBadRequest,
		`{"os-stop": null, "os-start": null}`:             http.StatusBadRequest,
		`{"os-start": null}`:                              http.StatusConflict, // not stopped
		`{"rebuild": {}}`:                                 http.StatusBadRequest,
		`{"rebuild": {"imageRef": "i", "key_name": "k"}}`: http.StatusBadRequest, // key_name needs 2.54
	} {
		if r := do(t, e.ts, http.MethodPost, act, adminToken, body, nil); r.code != code {
			t.Errorf("POST %s: %s, want %d", body, r, code)
		}
	}
	if r := do(t, e.ts, http.MethodPost, computeBase+"/servers/00000000-0000-4000-8000-000000000009/action", adminToken, `{"os-stop": null}`, nil); r.code != http.StatusNotFound {
		t.Errorf("unknown server: %s", r)
	}
	if r := do(t, e.ts, http.MethodPost, act, readerToken, `{"os-stop": null}`, nil); r.code != http.StatusForbidden {
		t.Errorf("reader: %s", r)
	}
	if e.digest() != before {
		t.Fatal("refused actions changed the state")
	}

	if r := do(t, e.ts, http.MethodPost, act, adminToken, `{"reboot": {"type": "HARD"}}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("reboot: %s", r)
	}
	v := show()
	if v["status"] != "HARD_REBOOT" || v["OS-EXT-STS:task_state"] != fsm.TaskRebootingHard {
		t.Fatalf("rebooting server: %v", v)
	}
	if r := do(t, e.ts, http.MethodPost, act, adminToken, `{"os-stop": null}`, nil); r.code != http.StatusConflict {
		t.Fatalf("stop during a reboot: %s", r)
	}
	if s, _ := e.peer.Node.Store().Server(adoptedID); s.Action == nil || s.Action.Kind != fsm.ActionRebootHard {
		t.Fatalf("the intent is not in the log: %+v", s.Action)
	}
}

func TestRebuildShowsServer(t *testing.T) {
	e, _, _ := hypervisorEnv(t)
	r := do(t, e.ts, http.MethodPost, computeBase+"/servers/"+adoptedID+"/action", adminToken,
		`{"rebuild": {"imageRef": "http://images/v2.qcow2", "preserve_ephemeral": false}}`, nil)
	if r.code != http.StatusAccepted || get(t, r.json(t), "server", "status") != "REBUILD" {
		t.Fatalf("rebuild: %s", r)
	}
	if s, _ := e.peer.Node.Store().Server(adoptedID); s.Action == nil || s.Action.ImageRef != "http://images/v2.qcow2" {
		t.Fatalf("rebuild intent %+v", s.Action)
	}
}

func TestRenameAndLock(t *testing.T) {
	e, _, _ := hypervisorEnv(t)
	path := computeBase + "/servers/" + adoptedID
	r := do(t, e.ts, http.MethodPut, path, adminToken, `{"server": {"name": "db-renamed"}}`, nil)
	if r.code != http.StatusOK || get(t, r.json(t), "server", "name") != "db-renamed" {
		t.Fatalf("rename: %s", r)
	}
	for _, bad := range []string{`{"server": {"name": ""}}`, `{"server": {"name": "x", "color": 1}}`, `{"server": {"name": " x"}}`,
		`{"server": {"name": "a\u0000b"}}`, `{"server": {"accessIPv4": "10.0.0.300"}}`, `{"server": {"OS-DCF:diskConfig": "BOTH"}}`} {
		if r := do(t, e.ts, http.MethodPut, path, adminToken, bad, nil); r.code != http.StatusBadRequest {
			t.Errorf("PUT %s: %s", bad, r)
		}
	}
	// Nova's update takes nothing at all, and OS-DCF:diskConfig, which its
	// Ironic driver ignores.
	for _, ok := range []string{`{"server": {}}`, `{"server": {"OS-DCF:diskConfig": "AUTO"}}`} {
		if r := do(t, e.ts, http.MethodPut, path, adminToken, ok, nil); r.code != http.StatusOK || get(t, r.json(t), "server", "name") != "db-renamed" {
			t.Errorf("PUT %s: %s", ok, r)
		}
	}
	if r := do(t, e.ts, http.MethodPost, path+"/action", adminToken, `{"lock": {"locked_reason": "audit"}}`, nil); r.code != http.StatusBadRequest {
		t.Fatalf("a lock reason below 2.73: %s", r)
	}
	if r := do(t, e.ts, http.MethodPost, path+"/action", adminToken, `{"lock": {"locked_reason": "audit"}}`, mv("2.73")); r.code != http.StatusAccepted {
		t.Fatalf("lock: %s", r)
	}
	v := get(t, do(t, e.ts, http.MethodGet, path, adminToken, "", mv("2.73")).json(t), "server").(map[string]any)
	if v["locked"] != true || v["locked_reason"] != "audit" {
		t.Fatalf("locked server: %v", v)
	}
	if r := do(t, e.ts, http.MethodPost, path+"/action", adminToken, `{"unlock": null}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("unlock: %s", r)
	}
	if s, _ := e.peer.Node.Store().Server(adoptedID); s.Locked || s.Name != "db-renamed" {
		t.Fatalf("after unlock: %+v", s)
	}
}
