package api_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
)

// PUT /servers/{id} keeps the description (2.19) and the access
// addresses (in Nova's canonical form), and null clears the description,
// as Nova.
func TestUpdateServerFields(t *testing.T) {
	e, _, _ := hypervisorEnv(t)
	path := computeBase + "/servers/" + adoptedID
	r := do(t, e.ts, http.MethodPut, path, adminToken, `{"server": {"description": "db"}}`, nil)
	if r.code != http.StatusBadRequest {
		t.Fatalf("a description below 2.19: %s", r)
	}
	r = do(t, e.ts, http.MethodPut, path, adminToken,
		`{"server": {"name": "db-2", "description": "primary", "accessIPv4": "192.0.2.7", "accessIPv6": "2001:0DB8:0:0:0:0:0:0007"}}`, mv("2.19"))
	if r.code != http.StatusOK {
		t.Fatalf("update: %s", r)
	}
	v := get(t, r.json(t), "server").(map[string]any)
	if v["name"] != "db-2" || v["description"] != "primary" || v["accessIPv4"] != "192.0.2.7" || v["accessIPv6"] != "2001:db8::7" {
		t.Fatalf("updated view: %v", v)
	}
	r = do(t, e.ts, http.MethodPut, path, adminToken, `{"server": {"description": null}}`, mv("2.19"))
	if r.code != http.StatusOK || get(t, r.json(t), "server", "description") != nil {
		t.Fatalf("clearing the description: %s", r)
	}
	if s, _ := e.peer.Node.Store().Server(adoptedID); s.Description != nil || s.Name != "db-2" || s.AccessIPv4 != "192.0.2.7" {
		t.Fatalf("stored: %+v", s)
	}
	before := e.digest()
	for _, bad := range []string{`{"server": {"accessIPv6": "192.0.2.1"}}`, `{"server": {"description": "` + strings.Repeat("d", 256) + `"}}`} {
		if r := do(t, e.ts, http.MethodPut, path, adminToken, bad, mv("2.19")); r.code != http.StatusBadRequest {
			t.Errorf("PUT %s: %s", bad, r)
		}
	}
	if e.digest() != before {
		t.Fatal("refused updates changed the state")
	}
}

// A rebuild changes the name, metadata, description and access addresses
// it gives, and answers them.
func TestRebuildChangesFields(t *testing.T) {
	e, _, _ := hypervisorEnv(t)
	r := do(t, e.ts, http.MethodPost, computeBase+"/servers/"+adoptedID+"/action", adminToken,
		`{"rebuild": {"imageRef": "http://images/v2.qcow2", "name": "db-r", "metadata": {"role": "db"}, "description": "rebuilt",
		"accessIPv4": "192.0.2.9", "preserve_ephemeral": true}}`, mv("2.19"))
	if r.code != http.StatusAccepted {
		t.Fatalf("rebuild: %s", r)
	}
	v := get(t, r.json(t), "server").(map[string]any)
	if v["name"] != "db-r" || v["description"] != "rebuilt" || v["accessIPv4"] != "192.0.2.9" || get(t, v, "metadata", "role") != "db" {
		t.Fatalf("rebuild view: %v", v)
	}
	s, _ := e.peer.Node.Store().Server(adoptedID)
	if s.Action == nil || !s.Action.PreserveEphemeral || s.Action.ImageRef != "http://images/v2.qcow2" || s.Metadata["role"] != "db" {
		t.Fatalf("stored: %+v %+v", s, s.Action)
	}
	if r := do(t, e.ts, http.MethodPost, computeBase+"/servers/"+adoptedID+"/action", adminToken,
		`{"rebuild": {"imageRef": "i", "user_data": "aGk="}}`, mv("2.56")); r.code != http.StatusBadRequest {
		t.Fatalf("user_data below 2.57: %s", r)
	}
}

// The metadata of a server, whole and by item, with Nova's codes.
func TestServerMetadata(t *testing.T) {
	e, _, _ := hypervisorEnv(t)
	base := computeBase + "/servers/" + adoptedID + "/metadata"
	r := do(t, e.ts, http.MethodPut, base, adminToken, `{"metadata": {"a": "1", "b": "2"}}`, nil)
	if r.code != http.StatusOK || get(t, r.json(t), "metadata", "b") != "2" {
		t.Fatalf("replace: %s", r)
	}
	r = do(t, e.ts, http.MethodPost, base, adminToken, `{"metadata": {"b": "3", "c": "4"}}`, nil)
	if r.code != http.StatusOK || get(t, r.json(t), "metadata", "a") != "1" || get(t, r.json(t), "metadata", "b") != "3" {
		t.Fatalf("merge: %s", r)
	}
	r = do(t, e.ts, http.MethodPut, base+"/d", adminToken, `{"meta": {"d": "5"}}`, nil)
	if r.code != http.StatusOK || get(t, r.json(t), "meta", "d") != "5" {
		t.Fatalf("set item: %s", r)
	}
	r = do(t, e.ts, http.MethodGet, base+"/d", adminToken, "", nil)
	if r.code != http.StatusOK || get(t, r.json(t), "meta", "d") != "5" {
		t.Fatalf("get item: %s", r)
	}
	if r := do(t, e.ts, http.MethodDelete, base+"/a", adminToken, "", nil); r.code != http.StatusNoContent {
		t.Fatalf("delete item: %s", r)
	}
	r = do(t, e.ts, http.MethodGet, base, adminToken, "", nil)
	if m := get(t, r.json(t), "metadata").(map[string]any); len(m) != 3 || m["a"] != nil {
		t.Fatalf("after delete: %v", m)
	}
	before := e.digest()
	many := make([]string, fsm.DefaultMetadataItems+1)
	for i := range many {
		many[i] = fmt.Sprintf(`"k%d": "v"`, i)
	}
	for _, tc := range []struct {
		method, path, body string
		code               int
		msg                string
	}{
		{http.MethodGet, base + "/a", "", http.StatusNotFound, "Metadata item was not found"},
		{http.MethodDelete, base + "/a", "", http.StatusNotFound, "Metadata item was not found"},
		{http.MethodPut, base + "/d", `{"meta": {"e": "5"}}`, http.StatusBadRequest, "Request body and URI mismatch"},
		{http.MethodPut, base + "/d", `{"meta": {"d": "5", "e": "6"}}`, http.StatusBadRequest, "Request body contains too many items"},
		{http.MethodPut, base, `{"metadata": {` + strings.Join(many, ",") + `}}`, http.StatusForbidden, "Maximum number of metadata items exceeds 128"},
		{http.MethodPost, base, `{"metadata": {` + strings.Join(many[:126], ",") + `}}`, http.StatusForbidden, "Maximum number of metadata items exceeds 128"},
		{http.MethodPost, base, `{"metadata": {"a/b": "1"}}`, http.StatusBadRequest, ""},
		{http.MethodGet, computeBase + "/servers/00000000-0000-4000-8000-000000000009/metadata", "", http.StatusNotFound, "could not be found"},
	} {
		r := do(t, e.ts, tc.method, tc.path, adminToken, tc.body, nil)
		if _, msg := errorMessage(t, r); r.code != tc.code || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s %s %.40s: %s, want %d %q", tc.method, tc.path, tc.body, r, tc.code, tc.msg)
		}
	}
	if e.digest() != before {
		t.Fatal("refused metadata edits changed the state")
	}
}

// The tags of a server from 2.26, in its view and at /servers/{id}/tags.
func TestServerTags(t *testing.T) {
	e, _, _ := hypervisorEnv(t)
	base := computeBase + "/servers/" + adoptedID + "/tags"
	if r := do(t, e.ts, http.MethodGet, base, adminToken, "", mv("2.25")); r.code != http.StatusNotFound {
		t.Fatalf("tags below 2.26: %s", r)
	}
	r := do(t, e.ts, http.MethodPut, base, adminToken, `{"tags": ["b", "a", "b"]}`, mv("2.26"))
	if r.code != http.StatusOK || fmt.Sprint(get(t, r.json(t), "tags")) != "[a b]" {
		t.Fatalf("replace: %s", r)
	}
	r = do(t, e.ts, http.MethodPut, base+"/c", adminToken, "", mv("2.26"))
	if r.code != http.StatusCreated || !strings.HasSuffix(r.header.Get("Location"), "/servers/"+adoptedID+"/tags/c") {
		t.Fatalf("add: %s %v", r, r.header)
	}
	if r := do(t, e.ts, http.MethodPut, base+"/c", adminToken, "", mv("2.26")); r.code != http.StatusNoContent {
		t.Fatalf("add again: %s", r)
	}
	if r := do(t, e.ts, http.MethodGet, base+"/c", adminToken, "", mv("2.26")); r.code != http.StatusNoContent {
		t.Fatalf("has tag: %s", r)
	}
	if r := do(t, e.ts, http.MethodDelete, base+"/a", adminToken, "", mv("2.26")); r.code != http.StatusNoContent {
		t.Fatalf("delete tag: %s", r)
	}
	v := get(t, do(t, e.ts, http.MethodGet, computeBase+"/servers/"+adoptedID, adminToken, "", mv("2.26")).json(t), "server").(map[string]any)
	if fmt.Sprint(v["tags"]) != "[b c]" {
		t.Fatalf("view tags: %v", v["tags"])
	}
	before := e.digest()
	many := make([]string, fsm.MaxTags+1)
	for i := range many {
		many[i] = fmt.Sprintf(`"t%d"`, i)
	}
	for _, tc := range []struct {
		method, path, body string
		code               int
	}{
		{http.MethodGet, base + "/a", "", http.StatusNotFound},
		{http.MethodDelete, base + "/a", "", http.StatusNotFound},
		{http.MethodPut, base, `{"tags": [` + strings.Join(many, ",") + `]}`, http.StatusBadRequest},
		{http.MethodPut, base, `{"tags": ["a,b"]}`, http.StatusBadRequest},
		{http.MethodPut, base + "/" + strings.Repeat("t", 61), "", http.StatusBadRequest},
	} {
		if r := do(t, e.ts, tc.method, tc.path, adminToken, tc.body, mv("2.26")); r.code != tc.code {
			t.Errorf("%s %s %.40s: %s, want %d", tc.method, tc.path, tc.body, r, tc.code)
		}
	}
	if e.digest() != before {
		t.Fatal("refused tag edits changed the state")
	}
	if r := do(t, e.ts, http.MethodDelete, base, adminToken, "", mv("2.26")); r.code != http.StatusNoContent {
		t.Fatalf("delete all: %s", r)
	}
	if s, _ := e.peer.Node.Store().Server(adoptedID); s.Tags != nil {
		t.Fatalf("tags after delete: %v", s.Tags)
	}
}

// GET /servers/{id}/ips and /ips/{network}.
func TestServerIPs(t *testing.T) {
	e, _, _ := hypervisorEnv(t)
	r := do(t, e.ts, http.MethodGet, computeBase+"/servers/"+adoptedID+"/ips", adminToken, "", nil)
	if r.code != http.StatusOK || get(t, r.json(t), "addresses") == nil {
		t.Fatalf("ips: %s", r)
	}
	r = do(t, e.ts, http.MethodGet, computeBase+"/servers/"+adoptedID+"/ips/nowhere", adminToken, "", nil)
	if _, msg := errorMessage(t, r); r.code != http.StatusNotFound || msg != "Instance is not a member of specified network" {
		t.Fatalf("unknown network: %s", r)
	}
}

var reservationRE = regexp.MustCompile(`^r-[0-9a-z]{8}$`)

// min_count and max_count create several servers under one reservation
// id, named name-1, name-2, ... with their launch index.
func TestMultipleCreate(t *testing.T) {
	e, _, _ := hypervisorEnv(t)
	e.propose(&fsm.CreateFlavor{Flavor: fsm.Flavor{ID: "vm", Name: "vm", VCPUs: 1, RAM: 1, Disk: 1, IsPublic: true}})
	boot := func(extra string) response {
		return do(t, e.ts, http.MethodPost, computeBase+"/servers", adminToken,
			`{"server": {"name": "web", "flavorRef": "vm", "imageRef": "http://images/web.qcow2"`+extra+`}}`, mv("2.26"))
	}
	r := boot(`, "min_count": 2, "max_count": 3, "return_reservation_id": true`)
	if r.code != http.StatusAccepted {
		t.Fatalf("boot: %s", r)
	}
	res, _ := get(t, r.json(t), "reservation_id").(string)
	if !reservationRE.MatchString(res) {
		t.Fatalf("reservation id %q", res)
	}
	names := map[string]int{}
	for _, s := range e.peer.Node.Store().Servers() {
		if s.ReservationID == res {
			names[s.Name] = s.LaunchIndex
		}
	}
	if fmt.Sprint(names) != "map[web-1:0 web-2:1 web-3:2]" {
		t.Fatalf("servers of the reservation: %v", names)
	}
	r = boot(`, "max_count": 2`)
	id, _ := get(t, r.json(t), "server", "id").(string)
	if r.code != http.StatusAccepted || id == "" {
		t.Fatalf("boot of 2: %s", r)
	}
	v := get(t, do(t, e.ts, http.MethodGet, computeBase+"/servers/"+id, adminToken, "", mv("2.3")).json(t), "server").(map[string]any)
	if v["name"] != "web-1" || v["OS-EXT-SRV-ATTR:launch_index"] != float64(0) || !reservationRE.MatchString(fmt.Sprint(v["OS-EXT-SRV-ATTR:reservation_id"])) {
		t.Fatalf("first server: %v", v)
	}
	r = boot(`, "tags": ["x"], "description": "d"`)
	if r.code != http.StatusBadRequest {
		t.Fatalf("tags below 2.52: %s", r)
	}
	r = do(t, e.ts, http.MethodPost, computeBase+"/servers", adminToken,
		`{"server": {"name": "one", "flavorRef": "vm", "imageRef": "http://images/web.qcow2", "tags": ["x"], "description": "d", "accessIPv4": "192.0.2.1", "networks": "none"}}`, mv("2.52"))
	id, _ = get(t, r.json(t), "server", "id").(string)
	if s, _ := e.peer.Node.Store().Server(id); r.code != http.StatusAccepted || s.Name != "one" || fmt.Sprint(s.Tags) != "[x]" || s.AccessIPv4 != "192.0.2.1" {
		t.Fatalf("boot with fields: %s %+v", r, s)
	}
	// Fewer hosts than min_count: every server of the request in ERROR,
	// as Nova's scheduler leaves them, none of them placed.
	e.propose(&fsm.CreateFlavor{Flavor: fsm.Flavor{ID: "half", Name: "half", VCPUs: 16, RAM: 1, Disk: 1, IsPublic: true}})
	r = do(t, e.ts, http.MethodPost, computeBase+"/servers", adminToken,
		`{"server": {"name": "big", "flavorRef": "half", "imageRef": "i", "min_count": 3, "return_reservation_id": true}}`, nil)
	if r.code != http.StatusAccepted {
		t.Fatalf("boot of 3 halves: %s", r)
	}
	res = get(t, r.json(t), "reservation_id").(string)
	failed := 0
	for _, s := range e.peer.Node.Store().Servers() {
		if s.ReservationID != res {
			continue
		}
		if s.Status != fsm.StatusError || s.Host != "" || s.Fault == nil || !strings.Contains(s.Fault.Message, "No valid host was found") {
			t.Errorf("a server of an unplaceable request: %+v", s)
		}
		failed++
	}
	if failed != 3 {
		t.Fatalf("%d servers of the unplaceable request, want 3 in ERROR", failed)
	}
	before := e.digest()
	for _, bad := range []string{`, "min_count": 3, "max_count": 2`, `, "max_count": 0`, `, "min_count": 1001`,
		`, "max_count": 2, "networks": [{"port": "6fae68da-108b-4a9d-87c4-0000000000aa"}]`} {
		if r := boot(bad); r.code/100 != 4 {
			t.Errorf("boot %s: %s", bad, r)
		}
	}
	if e.digest() != before {
		t.Fatal("refused boots changed the state")
	}
}

var passwordRE = regexp.MustCompile(`^[2-9A-HJ-NP-Za-km-z]{12}$`)

// A create and a rebuild answer the server's admin password, given or
// drawn as Nova draws one, and hand it to the owner through the log; no
// view shows it. With enable_instance_password off, no answer has it.
func TestAdminPass(t *testing.T) {
	e, _, _ := hypervisorEnv(t)
	e.propose(&fsm.CreateFlavor{Flavor: fsm.Flavor{ID: "vm", Name: "vm", VCPUs: 1, RAM: 1, Disk: 1, IsPublic: true}})
	boot := func(ts *httptest.Server, extra string) (string, map[string]any) {
		r := do(t, ts, http.MethodPost, computeBase+"/servers", adminToken,
			`{"server": {"name": "web", "flavorRef": "vm", "imageRef": "http://images/web.qcow2"`+extra+`}}`, nil)
		if r.code != http.StatusAccepted {
			t.Fatalf("boot %s: %s", extra, r)
		}
		v := get(t, r.json(t), "server").(map[string]any)
		s, _ := e.peer.Node.Store().Server(v["id"].(string))
		return s.AdminPass, v
	}
	held, v := boot(e.ts, "")
	if !passwordRE.MatchString(fmt.Sprint(v["adminPass"])) || held != v["adminPass"] {
		t.Fatalf("a drawn password: answered %v, held %q", v["adminPass"], held)
	}
	held, v = boot(e.ts, `, "adminPass": "given-pass"`)
	if v["adminPass"] != "given-pass" || held != "given-pass" {
		t.Fatalf("a given password: answered %v, held %q", v["adminPass"], held)
	}
	r := do(t, e.ts, http.MethodPost, computeBase+"/servers/"+adoptedID+"/action", adminToken,
		`{"rebuild": {"imageRef": "http://images/v2.qcow2", "adminPass": "rebuilt-pass"}}`, nil)
	if s, _ := e.peer.Node.Store().Server(adoptedID); r.code != http.StatusAccepted || get(t, r.json(t), "server", "adminPass") != "rebuilt-pass" || s.AdminPass != "rebuilt-pass" {
		t.Fatalf("rebuild: %s (held %q)", r, s.AdminPass)
	}
	for _, path := range []string{"/servers/" + adoptedID, "/servers/detail"} {
		if r := do(t, e.ts, http.MethodGet, computeBase+path, adminToken, "", nil); strings.Contains(string(r.body), "pass") {
			t.Errorf("GET %s shows a password: %s", path, r)
		}
	}

	srv, err := api.New(api.Config{Tokens: map[string]core.Role{adminToken: core.RoleAdmin}, Peers: e.peer.Node,
		Logger: slog.New(slog.DiscardHandler), NoInstancePassword: true}, e.peer.Node)
	if err != nil {
		t.Fatal(err)
	}
	off := httptest.NewServer(srv.Handler())
	t.Cleanup(off.Close)
	held, v = boot(off, "")
	if _, shown := v["adminPass"]; shown || !passwordRE.MatchString(held) {
		t.Fatalf("enable_instance_password off: answered %v, held a password %v", v, passwordRE.MatchString(held))
	}
	s, _ := e.peer.Node.Store().Server(adoptedID)
	e.propose(&fsm.FinishServerAction{ID: adoptedID, Host: s.Host, Epoch: s.Epoch, Kind: fsm.ActionRebuild})
	if s, _ := e.peer.Node.Store().Server(adoptedID); s.AdminPass != "" {
		t.Fatal("a finished rebuild still holds its password")
	}
	r = do(t, off, http.MethodPost, computeBase+"/servers/"+adoptedID+"/action", adminToken, `{"rebuild": {"imageRef": "http://images/v3.qcow2"}}`, nil)
	if _, shown := get(t, r.json(t), "server").(map[string]any)["adminPass"]; r.code != http.StatusAccepted || shown {
		t.Fatalf("a rebuild with enable_instance_password off: %s", r)
	}
}

// A boot's access addresses are kept as Nova keeps them, in the form
// Tempest's test_verify_server_details compares with (netaddr's).
func TestBootAccessIPsCanonical(t *testing.T) {
	e := bareMetalEnv(t, 1)
	r := do(t, e.ts, http.MethodPost, computeBase+"/servers", memberA, `{"server": {"name": "ips", "imageRef": "http://img/a",
		"flavorRef": "bm", "networks": "none", "accessIPv4": "1.1.1.1", "accessIPv6": "0000:0000:0000:0000:0000:babe:220.12.22.2"}}`, nil)
	if r.code != http.StatusAccepted {
		t.Fatalf("boot: %s", r)
	}
	id := get(t, r.json(t), "server", "id").(string)
	v := get(t, do(t, e.ts, http.MethodGet, computeBase+"/servers/"+id, memberA, "", nil).json(t), "server").(map[string]any)
	if v["accessIPv4"] != "1.1.1.1" || v["accessIPv6"] != "::babe:dc0c:1602" {
		t.Fatalf("access addresses: %v %v", v["accessIPv4"], v["accessIPv6"])
	}
}
