package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/api/nova"
	"github.com/corral-dev/corral/fsm"
)

// The views of the compute API against Nova's response schemas as Tempest
// ships them (testdata/tempest), at every boundary of the view tables: for
// each field the microversion before the one that adds it, that one, the
// last that carries it and the one after, and corral's minimum and
// maximum. At each, every route of the views is called and its answer
// held to Tempest's schema for that microversion, and each view's fields
// are held to the table: none outside its range, every one in its range
// (but those the table says only some items carry).

// boundaryVersions are the microversions the test walks.
func boundaryVersions(t *testing.T) []core.Microversion {
	t.Helper()
	minV, maxV := parseMV(t, nova.MinVersion), parseMV(t, nova.MaxVersion)
	set := map[core.Microversion]bool{minV: true, maxV: true}
	add := func(v core.Microversion) {
		if !v.Less(minV) && !maxV.Less(v) {
			set[v] = true
		}
	}
	for _, f := range nova.Fields() {
		since := parseMV(t, f.Since)
		add(since)
		add(core.Microversion{Major: since.Major, Minor: since.Minor - 1})
		if f.Until != "" {
			until := parseMV(t, f.Until)
			add(until)
			add(core.Microversion{Major: until.Major, Minor: until.Minor + 1})
		}
	}
	out := make([]core.Microversion, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// viewWalk calls the compute API at one microversion.
type viewWalk struct {
	t *testing.T
	e *env
	// noPass is the API of e's peer with enable_instance_password off.
	noPass  *httptest.Server
	mv      core.Microversion
	schemas tempestSchemas
}

func (w *viewWalk) at(minor int) bool {
	return !w.mv.Less(core.Microversion{Major: 2, Minor: minor})
}

// call sends a request at the walk's microversion as an admin and holds
// the answer to Tempest's schema (none: the caller checks it).
func (w *viewWalk) call(method, path, body, schema string) (response, map[string]any) {
	w.t.Helper()
	return w.callOn(w.e.ts, method, path, body, schema)
}

// callOn is call on the API ts.
func (w *viewWalk) callOn(ts *httptest.Server, method, path, body, schema string) (response, map[string]any) {
	w.t.Helper()
	r := do(w.t, ts, method, computeBase+path, adminToken, body, mv(w.mv.String()))
	if schema != "" {
		w.schemas.check(w.t, schema, w.mv, r)
	}
	var v map[string]any
	if len(r.body) > 0 {
		dec := json.NewDecoder(bytes.NewReader(r.body))
		dec.UseNumber() // ids of 48 bits stay exact
		_ = dec.Decode(&v)
	}
	return r, v
}

// fields holds a view's object to its table: the fields in range for the
// view and no others; those the table marks "when" may be missing.
func (w *viewWalk) fields(resource, view string, obj any) {
	w.t.Helper()
	m, ok := obj.(map[string]any)
	if !ok {
		w.t.Errorf("%s %s at %s: %T is not an object", resource, view, w.mv, obj)
		return
	}
	want, optional := map[string]bool{}, map[string]bool{}
	for _, f := range nova.Fields() {
		if f.Resource != resource || !slices.Contains(f.Views, view) {
			continue
		}
		if w.mv.Less(parseMV(w.t, f.Since)) || f.Until != "" && parseMV(w.t, f.Until).Less(w.mv) {
			continue
		}
		if f.When != "" {
			optional[f.Name] = true
		} else {
			want[f.Name] = true
		}
	}
	for k := range m {
		if !want[k] && !optional[k] {
			w.t.Errorf("%s %s at %s shows %q, which its table has not there", resource, view, w.mv, k)
		}
	}
	for k := range want {
		if _, ok := m[k]; !ok {
			w.t.Errorf("%s %s at %s lacks %q", resource, view, w.mv, k)
		}
	}
}

func (w *viewWalk) each(resource, view string, list any) {
	w.t.Helper()
	items, _ := list.([]any)
	if len(items) == 0 {
		w.t.Errorf("%s %s at %s: an empty list tells nothing", resource, view, w.mv)
	}
	for _, it := range items {
		w.fields(resource, view, it)
	}
}

const importedKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHYzxnz8TTPOcU2Tt5dsBKw6bXPv6aFRbfVXyzQy+qV2 views@corral"

func TestViewsFollowTheMicroversion(t *testing.T) {
	schemas := loadTempestSchemas(t)
	e, _, _ := hypervisorEnv(t)
	st := e.peer.Node.Store()
	createFlavor(t, e, `{"flavor": {"name": "views", "id": "views", "ram": 1024, "vcpus": 1, "disk": 10, "swap": 512}}`)
	createFlavor(t, e, `{"flavor": {"name": "private", "id": "private", "ram": 1024, "vcpus": 1, "disk": 10, "os-flavor-access:is_public": false}}`)
	for path, body := range map[string]string{
		"/flavors/views/os-extra_specs":     `{"extra_specs": {"resources:CUSTOM_BAREMETAL": "1"}}`,
		"/flavors/private/action":           `{"addTenantAccess": {"tenant": "p1"}}`,
		"/servers/" + adoptedID + "/action": `{"lock": {"locked_reason": "audit"}}`,
	} {
		if r := do(t, e.ts, http.MethodPost, computeBase+path, adminToken, body, mv("2.73")); r.code/100 != 2 {
			t.Fatalf("POST %s: %s", path, r)
		}
	}
	// A server in ERROR, with its fault.
	r := do(t, e.ts, http.MethodPost, computeBase+"/servers", adminToken,
		`{"server": {"name": "broken", "imageRef": "http://images/x.qcow2", "flavorRef": "views", "networks": "none"}}`, nil)
	if r.code != http.StatusAccepted {
		t.Fatalf("boot: %s", r)
	}
	broken := get(t, r.json(t), "server", "id").(string)
	s, err := st.Server(broken)
	if err != nil {
		t.Fatal(err)
	}
	e.propose(&fsm.SetServerTask{ID: broken, Host: s.Host, Epoch: s.Epoch, Status: fsm.StatusError,
		Fault: &fsm.Fault{Code: 500, Message: "deploy failed", Created: time.Now()}})

	srv, err := api.New(api.Config{Tokens: map[string]core.Role{adminToken: core.RoleAdmin}, Peers: e.peer.Node,
		Logger: slog.New(slog.DiscardHandler), NoInstancePassword: true}, e.peer.Node)
	if err != nil {
		t.Fatal(err)
	}
	noPass := httptest.NewServer(srv.Handler())
	t.Cleanup(noPass.Close)

	ie := newImagesEnv(t)

	versions := boundaryVersions(t)
	t.Logf("walking %d microversions: %v", len(versions), versions)
	for _, v := range versions {
		w := &viewWalk{t: t, e: e, noPass: noPass, mv: v, schemas: schemas}
		w.servers(broken)
		w.flavors()
		w.keyPairs()
		w.hypervisors()
		w.services()
		w.osHosts()
		w.limitsAndZones()
		w.quotas()
		w.hypervisorRoutes()
		w.extensions()
		w.usages()
		w.serverGroups()
		w.instanceActions(broken)
		w.images(ie)
	}
	checkVersionDocuments(t, e, schemas)
	for name := range schemas.ranges {
		if schemas.checked[name] == 0 {
			t.Errorf("no answer was held to Tempest's %s", name)
		}
	}
	t.Logf("answers held to Tempest's schemas: %v", schemas.checked)

	// The schemas bite: a field Nova adds later is refused at 2.1.
	minV := parseMV(t, nova.MinVersion)
	_, b := (&viewWalk{t: t, e: e, mv: minV, schemas: schemas}).call(http.MethodGet, "/servers/"+adoptedID, "", "")
	b["server"].(map[string]any)["locked"] = false
	if !schemas.refuses(t, "servers/get_server", minV, b) {
		t.Error("Tempest's schema of a server at 2.1 takes locked (2.9): the schemas are not checked")
	}
}

func (w *viewWalk) servers(broken string) {
	t := w.t
	_, b := w.call(http.MethodGet, "/servers/"+adoptedID, "", "servers/get_server")
	w.fields("server", "show", b["server"])
	_, b = w.call(http.MethodGet, "/servers/"+broken, "", "servers/get_server")
	w.fields("server", "show", b["server"])
	if f, _ := b["server"].(map[string]any); f["fault"] == nil {
		t.Errorf("server in ERROR at %s without its fault: %v", w.mv, f)
	}
	_, b = w.call(http.MethodGet, "/servers", "", "servers/list_servers")
	w.each("server", "brief", b["servers"])
	_, b = w.call(http.MethodGet, "/servers/detail", "", "servers/list_servers_detail")
	w.each("server", "detail", b["servers"])
	update := `{"server": {"name": "db-1", "accessIPv4": "192.0.2.1", "accessIPv6": "2001:db8::1"}}`
	if w.at(19) {
		update = `{"server": {"name": "db-1", "accessIPv4": "192.0.2.1", "description": "walked"}}`
	}
	_, b = w.call(http.MethodPut, "/servers/"+adoptedID, update, "servers/update_server")
	w.fields("server", "update", b["server"])
	if w.at(26) {
		w.call(http.MethodPut, "/servers/"+adoptedID+"/tags", `{"tags": ["walked"]}`, "")
		_, b = w.call(http.MethodGet, "/servers/"+adoptedID, "", "servers/get_server")
		if tags, _ := get(t, b, "server", "tags").([]any); len(tags) != 1 {
			t.Errorf("server tags at %s: %v", w.mv, tags)
		}
	}

	// A rebuild answers adminPass with enable_instance_password on, and
	// not with it off: Tempest's two schemas.
	for _, rb := range []struct {
		ts     *httptest.Server
		schema string
	}{{w.e.ts, "servers/rebuild_server_with_admin_pass"}, {w.noPass, "servers/rebuild_server"}} {
		_, b = w.callOn(rb.ts, http.MethodPost, "/servers/"+adoptedID+"/action", `{"rebuild": {"imageRef": "http://images/db.qcow2"}}`, rb.schema)
		w.fields("server", "rebuild", b["server"])
		s, err := w.e.peer.Node.Store().Server(adoptedID)
		if err != nil || s.Action == nil {
			t.Fatalf("rebuild at %s left no action: %+v, %v", w.mv, s.Action, err)
		}
		w.e.propose(&fsm.FinishServerAction{ID: adoptedID, Host: s.Host, Epoch: s.Epoch, Kind: fsm.ActionRebuild})
	}
	w.call(http.MethodGet, "/servers/"+adoptedID+"/os-server-password", "", "servers/show_password")
	w.call(http.MethodDelete, "/servers/"+adoptedID+"/os-server-password", "", "servers/server_actions_delete_password")
	for _, action := range []string{`{"unlock": null}`, `{"lock": null}`} {
		w.call(http.MethodPost, "/servers/"+adoptedID+"/action", action, "servers/server_actions_common_schema")
	}

	for _, cr := range []struct {
		ts     *httptest.Server
		schema string
	}{{w.e.ts, "servers/create_server_with_admin_pass"}, {w.noPass, "servers/create_server"}} {
		_, b = w.callOn(cr.ts, http.MethodPost, "/servers", `{"server": {"name": "new", "imageRef": "http://images/x.qcow2", "flavorRef": "views", "networks": "none"}}`,
			cr.schema)
		w.fields("server", "create", b["server"])
		if id, _ := get(t, b, "server", "id").(string); id != "" {
			w.call(http.MethodDelete, "/servers/"+id, "", "servers/delete_server")
		}
	}
}

func (w *viewWalk) flavors() {
	_, b := w.call(http.MethodGet, "/flavors", "", "flavors/list_flavors")
	w.each("flavor", "brief", b["flavors"])
	_, b = w.call(http.MethodGet, "/flavors/detail", "", "flavors/list_flavors_details")
	w.each("flavor", "show", b["flavors"])
	_, b = w.call(http.MethodGet, "/flavors/views", "", "flavors/create_update_get_flavor_details")
	w.fields("flavor", "show", b["flavor"])
	id := "f-" + strings.ReplaceAll(w.mv.String(), ".", "-")
	_, b = w.call(http.MethodPost, "/flavors", `{"flavor": {"name": "`+id+`", "id": "`+id+`", "ram": 512, "vcpus": 1, "disk": 1}}`,
		"flavors/create_update_get_flavor_details")
	w.fields("flavor", "show", b["flavor"])
	if w.at(55) {
		_, b = w.call(http.MethodPut, "/flavors/"+id, `{"flavor": {"description": "walked"}}`, "flavors/create_update_get_flavor_details")
		w.fields("flavor", "show", b["flavor"])
	}
	w.call(http.MethodDelete, "/flavors/"+id, "", "flavors/delete_flavor")
	w.call(http.MethodGet, "/flavors/views/os-extra_specs", "", "flavors/set_get_flavor_extra_specs")
	w.call(http.MethodGet, "/flavors/views/os-extra_specs/resources:CUSTOM_BAREMETAL", "", "flavors/set_get_flavor_extra_specs_key")
	w.call(http.MethodPut, "/flavors/views/os-extra_specs/walk", `{"walk": "1"}`, "flavors/set_get_flavor_extra_specs_key")
	w.call(http.MethodDelete, "/flavors/views/os-extra_specs/walk", "", "flavors/unset_flavor_extra_specs")
	w.call(http.MethodGet, "/flavors/private/os-flavor-access", "", "flavors/add_remove_list_flavor_access")
}

func (w *viewWalk) keyPairs() {
	name := "kp-" + strings.ReplaceAll(w.mv.String(), ".", "-")
	body := `{"keypair": {"name": "` + name + `", "public_key": "` + importedKey + `"}}`
	generated := w.mv.String() == nova.MinVersion || w.mv.String() == nova.MaxVersion
	if generated {
		body = `{"keypair": {"name": "` + name + `"}}`
	}
	_, b := w.call(http.MethodPost, "/os-keypairs", body, "keypairs/create_keypair")
	w.fields("keypair", "create", b["keypair"])
	if k, _ := b["keypair"].(map[string]any); generated && k["private_key"] == nil {
		w.t.Errorf("generated key pair at %s without its private key", w.mv)
	}
	_, b = w.call(http.MethodGet, "/os-keypairs", "", "keypairs/list_keypairs")
	list, _ := b["keypairs"].([]any)
	for _, it := range list {
		w.fields("keypair", "index", it.(map[string]any)["keypair"])
	}
	_, b = w.call(http.MethodGet, "/os-keypairs/"+name, "", "keypairs/get_keypair")
	w.fields("keypair", "show", b["keypair"])
	w.call(http.MethodDelete, "/os-keypairs/"+name, "", "keypairs/delete_keypair")
}

func (w *viewWalk) hypervisors() {
	queries := []string{""}
	if w.at(53) {
		queries = append(queries, "?with_servers=true")
	}
	for _, q := range queries {
		_, b := w.call(http.MethodGet, "/os-hypervisors"+q, "", "hypervisors/list_search_hypervisors")
		w.each("hypervisor", "brief", b["hypervisors"])
		_, b = w.call(http.MethodGet, "/os-hypervisors/detail"+q, "", "hypervisors/list_hypervisors_detail")
		w.each("hypervisor", "detail", b["hypervisors"])
		withServers := false
		list, _ := b["hypervisors"].([]any)
		for _, it := range list {
			id := fmt.Sprint(it.(map[string]any)["id"])
			if _, ok := it.(map[string]any)["servers"]; ok {
				withServers = true
			}
			_, hb := w.call(http.MethodGet, "/os-hypervisors/"+id+q, "", "hypervisors/get_hypervisor")
			w.fields("hypervisor", "detail", hb["hypervisor"])
			// Nova's Ironic driver cannot tell a node's uptime.
			if r, _ := w.call(http.MethodGet, "/os-hypervisors/"+id+"/uptime", "", ""); r.code != http.StatusNotImplemented {
				w.t.Errorf("uptime at %s: %s, want 501", w.mv, r)
			}
		}
		if q != "" && !withServers {
			w.t.Errorf("with_servers at %s shows no hypervisor's servers", w.mv)
		}
	}
}

func (w *viewWalk) services() {
	_, b := w.call(http.MethodGet, "/os-services", "", "services/list_services")
	w.each("service", "list", b["services"])
	if w.at(53) {
		for _, it := range b["services"].([]any) {
			if svc := it.(map[string]any); svc["host"] == "kvm-1" {
				_, ub := w.call(http.MethodPut, "/os-services/"+svc["id"].(string), `{"status": "enabled"}`, "services/update_service")
				w.fields("service", "list", ub["service"])
			}
		}
		return
	}
	host := `"host": "kvm-1", "binary": "nova-compute"`
	w.call(http.MethodPut, "/os-services/disable-log-reason", `{`+host+`, "disabled_reason": "walk"}`, "services/disable_log_reason")
	w.call(http.MethodPut, "/os-services/enable", `{`+host+`}`, "services/enable_disable_service")
	if w.at(11) {
		w.call(http.MethodPut, "/os-services/force-down", `{`+host+`, "forced_down": false}`, "services/update_forced_down")
	}
}

// osHosts walks os-hosts, which Nova serves up to 2.42.
func (w *viewWalk) osHosts() {
	if w.at(43) {
		if r, _ := w.call(http.MethodGet, "/os-hosts", "", ""); r.code != http.StatusNotFound {
			w.t.Errorf("os-hosts at %s: %s, want 404", w.mv, r)
		}
		return
	}
	_, b := w.call(http.MethodGet, "/os-hosts", "", "hosts/list_hosts")
	w.each("host", "list", b["hosts"])
	_, b = w.call(http.MethodGet, "/os-hosts/kvm-1", "", "hosts/get_host_detail")
	rows, _ := b["host"].([]any)
	if len(rows) < 3 {
		w.t.Errorf("os-hosts/kvm-1 at %s: %v", w.mv, b)
	}
	for _, it := range rows {
		w.fields("host_resource", "show", it.(map[string]any)["resource"])
	}
}

func (w *viewWalk) limitsAndZones() {
	_, b := w.call(http.MethodGet, "/limits", "", "limits/get_limit")
	w.fields("limits", "absolute", get(w.t, b, "limits", "absolute"))
	w.call(http.MethodGet, "/os-availability-zone", "", "availability_zones/list_availability_zone_list")
	w.call(http.MethodGet, "/os-availability-zone/detail", "", "availability_zones/list_availability_zone_list_detail")
}

// checkVersionDocuments holds the version list and each version's
// document to Tempest's schemas and to its test_versions: v2.0 listed
// first, and each self link answering a document with the same link.
func checkVersionDocuments(t *testing.T, e *env, schemas tempestSchemas) {
	minV := parseMV(t, nova.MinVersion)
	r := do(t, e.ts, http.MethodGet, "/compute/", "", "", nil)
	schemas.check(t, "versions/list_versions", minV, r)
	list := get(t, r.json(t), "versions").([]any)
	if len(list) != 2 || get(t, list, 0, "id") != "v2.0" || get(t, list, 1, "id") != "v2.1" {
		t.Fatalf("version list: %s", r.body)
	}
	for _, it := range list {
		self := get(t, it, "links", 0, "href").(string)
		dr := do(t, e.ts, http.MethodGet, strings.TrimPrefix(self, e.ts.URL), adminToken, "", nil)
		schemas.check(t, "versions/get_one_version", minV, dr)
		if got := get(t, dr.json(t), "version", "links", 0, "href"); got != self {
			t.Errorf("document of %s has self link %v", self, got)
		}
	}
}

// The server fields Nova's default policy shows to admins only, which
// corral added with the view tables, are an admin's: a project's member
// reads its server without them, within Tempest's schema all the same.
func TestAdminOnlyServerFields(t *testing.T) {
	schemas := loadTempestSchemas(t)
	e := cliKeystoneEnv(t)
	r := do(t, e.ts, http.MethodPost, computeBase+"/servers", memberA, `{"server": {"name": "a", "imageRef": "http://img/a",
		"flavorRef": "pub", "networks": "none", "user_data": "IyEvYmluL3NoCg=="}}`, nil)
	if r.code != http.StatusAccepted {
		t.Fatalf("boot: %s", r)
	}
	path := computeBase + "/servers/" + get(t, r.json(t), "server", "id").(string)
	maxV := parseMV(t, nova.MaxVersion)
	for token, admin := range map[string]bool{memberA: false, adminToken: true} {
		r := do(t, e.ts, http.MethodGet, path, token, "", mv(nova.MaxVersion))
		schemas.check(t, "servers/get_server", maxV, r)
		v := get(t, r.json(t), "server").(map[string]any)
		for _, k := range []string{"host_status", "OS-EXT-SRV-ATTR:user_data"} {
			if _, has := v[k]; has != admin {
				t.Errorf("admin %v: %s shown %v", admin, k, has)
			}
		}
	}
}
