package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/corral-dev/corral/fsm"
)

func createGroup(t *testing.T, e *keystoneEnv, token, version, body string) map[string]any {
	t.Helper()
	r := do(t, e.ts, http.MethodPost, computeBase+"/os-server-groups", token, body, mv(version))
	if r.code != http.StatusOK {
		t.Fatalf("create group at %s: %s", version, r)
	}
	return get(t, r.json(t), "server_group").(map[string]any)
}

// Create by microversion: policies (one of them) until 2.63, the soft
// ones from 2.15; policy and rules from 2.64, rules for anti-affinity
// only. A refused body changes nothing.
func TestServerGroupCreateByMicroversion(t *testing.T) {
	e := cliKeystoneEnv(t)
	before := e.digest()
	for _, c := range []struct{ version, body, msg string }{
		{"2.14", `{"server_group": {"name": "g", "policies": ["soft-affinity"]}}`, "is not one of"},
		{"2.1", `{"server_group": {"name": "g", "policies": ["affinity", "anti-affinity"]}}`, "exactly one"},
		{"2.1", `{"server_group": {"name": "g", "policies": []}}`, "exactly one"},
		{"2.1", `{"server_group": {"name": "g", "policy": "affinity"}}`, "'policy' was unexpected"},
		{"2.1", `{"server_group": {"name": " g", "policies": ["affinity"]}}`, "name"},
		{"2.1", `{"server_group": {"policies": ["affinity"]}}`, "'name' is a required property"},
		{"2.1", `{"server_group": {"name": "` + strings.Repeat("x", 256) + `", "policies": ["affinity"]}}`, "name"},
		{"2.1", `{"server_group": {"name": "a\u0007b", "policies": ["affinity"]}}`, "name"},
		{"2.64", `{"server_group": {"name": "g", "policies": ["affinity"]}}`, "'policies' was unexpected"},
		{"2.64", `{"server_group": {"name": "g", "policy": "affinity", "rules": {"max_server_per_host": 2}}}`, "Only anti-affinity policy supports rules."},
		{"2.64", `{"server_group": {"name": "g", "policy": "anti-affinity", "rules": {"max_server_per_host": 0}}}`, "max_server_per_host"},
		{"2.64", `{"server_group": {"name": "g", "policy": "anti-affinity", "rules": {"other": 1}}}`, "'other' was unexpected"},
	} {
		r := do(t, e.ts, http.MethodPost, computeBase+"/os-server-groups", memberA, c.body, mv(c.version))
		if key, msg := errorMessage(t, r); r.code != http.StatusBadRequest || key != "badRequest" || !strings.Contains(msg, c.msg) {
			t.Errorf("%s at %s: %s, want 400 with %q", c.body, c.version, r, c.msg)
		}
	}
	if e.digest() != before {
		t.Fatal("a refused create changed the state")
	}
	long := strings.Repeat("é", 255) // 255 characters, 510 bytes
	if g := createGroup(t, e, memberA, "2.1", `{"server_group": {"name": "`+long+`", "policies": ["affinity"]}}`); g["name"] != long {
		t.Errorf("long name: %v", g["name"])
	}
	g := createGroup(t, e, memberA, "2.1", `{"server_group": {"name": "web", "policies": ["anti-affinity"]}}`)
	if get(t, g, "policies", 0) != "anti-affinity" || len(g["members"].([]any)) != 0 || g["metadata"] == nil || g["project_id"] != nil {
		t.Errorf("group at 2.1: %v", g)
	}
	g = createGroup(t, e, memberA, "2.15", `{"server_group": {"name": "web", "policies": ["soft-affinity"]}}`)
	if g["project_id"] != "demo-a" || g["user_id"] != "ann-id" {
		t.Errorf("group at 2.15: %v", g)
	}
	g = createGroup(t, e, memberA, "2.64", `{"server_group": {"name": "web", "policy": "anti-affinity", "rules": {"max_server_per_host": "3"}}}`)
	if g["policy"] != "anti-affinity" || get(t, g, "rules", "max_server_per_host") != float64(3) || g["policies"] != nil {
		t.Errorf("group at 2.64: %v", g)
	}
}

// A project sees its own groups; an admin every project's with
// all_projects (a member asking for it is answered its own); another
// project's group is not found, as an unknown one.
func TestServerGroupListShowDelete(t *testing.T) {
	e := cliKeystoneEnv(t)
	a := createGroup(t, e, memberA, "2.13", `{"server_group": {"name": "a", "policies": ["affinity"]}}`)["id"].(string)
	createGroup(t, e, memberB, "2.13", `{"server_group": {"name": "b", "policies": ["affinity"]}}`)
	count := func(token, q string) int {
		r := do(t, e.ts, http.MethodGet, computeBase+"/os-server-groups"+q, token, "", nil)
		return len(get(t, r.json(t), "server_groups").([]any))
	}
	if n := count(memberA, ""); n != 1 {
		t.Errorf("demo-a lists %d groups, want 1", n)
	}
	if n := count(memberA, "?all_projects=True"); n != 1 {
		t.Errorf("demo-a with all_projects lists %d groups, want its 1", n)
	}
	if n := count(adminToken, "?all_projects=True"); n != 2 {
		t.Errorf("admin with all_projects lists %d groups, want 2", n)
	}
	if n := count(adminToken, "?all_projects=True&limit=1&offset=1"); n != 1 {
		t.Errorf("limit=1&offset=1: %d groups, want 1", n)
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/os-server-groups?limit=x", memberA, "", nil); r.code != http.StatusBadRequest {
		t.Errorf("bad limit: %s", r)
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/os-server-groups/"+a, memberB, "", nil); r.code != http.StatusNotFound {
		t.Errorf("demo-b shows demo-a's group: %s", r)
	}
	if r := do(t, e.ts, http.MethodDelete, computeBase+"/os-server-groups/"+a, memberB, "", nil); r.code != http.StatusNotFound {
		t.Errorf("demo-b deletes demo-a's group: %s", r)
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/os-server-groups/"+a, adminToken, "", nil); r.code != http.StatusOK {
		t.Errorf("admin shows demo-a's group: %s", r)
	}
	if r := do(t, e.ts, http.MethodDelete, computeBase+"/os-server-groups/"+a, memberA, "", nil); r.code != http.StatusNoContent {
		t.Fatalf("delete: %s", r)
	}
	r := do(t, e.ts, http.MethodGet, computeBase+"/os-server-groups/"+a, memberA, "", nil)
	if _, msg := errorMessage(t, r); r.code != http.StatusNotFound || msg != "Instance group "+a+" could not be found." {
		t.Errorf("deleted group: %s", r)
	}
}

func bootInGroup(t *testing.T, e *keystoneEnv, group string) response {
	t.Helper()
	return bootInGroupAs(t, e, memberA, group)
}

func bootInGroupAs(t *testing.T, e *keystoneEnv, token, group string) response {
	t.Helper()
	return do(t, e.ts, http.MethodPost, computeBase+"/servers", token,
		`{"server": {"name": "g", "imageRef": "http://img/a", "flavorRef": "bm", "networks": "none"},
		  "os:scheduler_hints": {"group": "`+group+`"}}`, nil)
}

// The group hint: members listed in the group and (2.71) in the server;
// anti-affinity over owner hosts, as Nova's Ironic driver counts one
// nova-compute as one host whatever its nodes: with one peer, a second
// member cannot be placed and is in ERROR with No valid host; affinity
// places every member on the one host.
func TestServerGroupSchedulerHint(t *testing.T) {
	e := bareMetalEnv(t, 3)
	anti := createGroup(t, e, memberA, "2.1", `{"server_group": {"name": "anti", "policies": ["anti-affinity"]}}`)["id"].(string)
	aff := createGroup(t, e, memberA, "2.1", `{"server_group": {"name": "aff", "policies": ["affinity"]}}`)["id"].(string)
	before := e.digest()
	for _, g := range []string{"not-a-uuid", "00000000-0000-4000-8000-000000000009"} {
		if r := bootInGroup(t, e, g); r.code != http.StatusBadRequest {
			t.Errorf("boot in group %s: %s, want 400", g, r)
		}
	}
	if r := bootInGroupAs(t, e, memberB, anti); r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "instance group "+anti) {
		t.Errorf("demo-b boots in demo-a's group: %s, want 400", r)
	}
	if e.digest() != before {
		t.Fatal("a refused boot changed the state")
	}
	boot := func(group string) fsm.Server {
		t.Helper()
		r := bootInGroup(t, e, group)
		if r.code != http.StatusAccepted {
			t.Fatalf("boot in %s: %s", group, r)
		}
		s, err := e.peer.Node.Store().Server(get(t, r.json(t), "server", "id").(string))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := boot(anti)
	if first.Host == "" || first.Status == fsm.StatusError {
		t.Fatalf("first anti-affinity member not placed: %+v", first)
	}
	second := boot(anti)
	if second.Status != fsm.StatusError || second.Fault == nil || !strings.HasPrefix(second.Fault.Message, "No valid host was found") {
		t.Fatalf("second anti-affinity member on one host: %+v, want ERROR with No valid host", second)
	}
	g := get(t, do(t, e.ts, http.MethodGet, computeBase+"/os-server-groups/"+anti, memberA, "", nil).json(t), "server_group").(map[string]any)
	if m := g["members"].([]any); len(m) != 2 || m[0] != first.ID || m[1] != second.ID {
		t.Errorf("members %v, want %s %s", m, first.ID, second.ID)
	}
	show := func(id, version string) map[string]any {
		return get(t, do(t, e.ts, http.MethodGet, computeBase+"/servers/"+id, memberA, "", mv(version)).json(t), "server").(map[string]any)
	}
	if sg := show(first.ID, "2.71")["server_groups"].([]any); len(sg) != 1 || sg[0] != anti {
		t.Errorf("server_groups at 2.71: %v, want [%s]", sg, anti)
	}
	if _, has := show(first.ID, "2.70")["server_groups"]; has {
		t.Error("server_groups shown at 2.70")
	}
	a1, a2 := boot(aff), boot(aff)
	if a1.Host == "" || a1.Host != a2.Host || a2.Status == fsm.StatusError {
		t.Errorf("affinity members %+v and %+v, want both on one host", a1, a2)
	}
	// A deleted member leaves its group.
	if r := do(t, e.ts, http.MethodDelete, computeBase+"/servers/"+second.ID, memberA, "", nil); r.code != http.StatusNoContent {
		t.Fatalf("delete: %s", r)
	}
	g = get(t, do(t, e.ts, http.MethodGet, computeBase+"/os-server-groups/"+anti, memberA, "", nil).json(t), "server_group").(map[string]any)
	if m := g["members"].([]any); len(m) != 1 || m[0] != first.ID {
		t.Errorf("members after the delete: %v", m)
	}
}
