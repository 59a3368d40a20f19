package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// os-hosts: the list of enabled nova-compute services by zone, a host's
// resources, Nova's 501 for what its Ironic driver cannot do to a host,
// Nova's 404s, and nothing from microversion 2.43.
func TestOSHosts(t *testing.T) {
	e, _, _ := hypervisorEnv(t)
	createFlavor(t, e, `{"flavor": {"name": "vm", "id": "vm", "ram": 2048, "vcpus": 2, "disk": 20, "OS-FLV-EXT-DATA:ephemeral": 5}}`)
	for _, name := range []string{"a", "b"} {
		r := do(t, e.ts, http.MethodPost, computeBase+"/servers", adminToken,
			`{"server": {"name": "`+name+`", "imageRef": "http://images/x.qcow2", "flavorRef": "vm", "networks": "none"}}`, nil)
		if r.code != http.StatusAccepted {
			t.Fatalf("boot: %s", r)
		}
	}
	hosts := func(query string) []string {
		t.Helper()
		r := do(t, e.ts, http.MethodGet, computeBase+"/os-hosts"+query, adminToken, "", nil)
		if r.code != http.StatusOK {
			t.Fatalf("list %s: %s", query, r)
		}
		var out []string
		for _, it := range get(t, r.json(t), "hosts").([]any) {
			h := it.(map[string]any)
			if h["service"] != "compute" || h["zone"] != "nova" || len(h) != 3 {
				t.Errorf("host entry %v", h)
			}
			out = append(out, h["host_name"].(string))
		}
		slices.Sort(out)
		return out
	}
	both := []string{"kvm-1", e.peer.Name}
	slices.Sort(both)
	for _, q := range []string{"", "?zone=", "?zone=nova", "?zone=internal&zone=nova"} {
		if got := hosts(q); !slices.Equal(got, both) {
			t.Errorf("os-hosts%s = %v, want %v", q, got, both)
		}
	}
	for _, q := range []string{"?zone=xxx", "?zone=internal"} {
		if got := hosts(q); len(got) != 0 {
			t.Errorf("os-hosts%s = %v, want none", q, got)
		}
	}
	// A disabled service is not listed, as in Nova.
	if r := do(t, e.ts, http.MethodPut, computeBase+"/os-services/disable", adminToken, `{"host": "kvm-1", "binary": "nova-compute"}`, nil); r.code != http.StatusOK {
		t.Fatalf("disable: %s", r)
	}
	if got := hosts(""); !slices.Equal(got, []string{e.peer.Name}) {
		t.Errorf("os-hosts with kvm-1 disabled = %v", got)
	}
	if r := do(t, e.ts, http.MethodPut, computeBase+"/os-services/enable", adminToken, `{"host": "kvm-1", "binary": "nova-compute"}`, nil); r.code != http.StatusOK {
		t.Fatalf("enable: %s", r)
	}

	// kvm-1's resources: its compute node, its servers in total and per project.
	r := do(t, e.ts, http.MethodGet, computeBase+"/os-hosts/kvm-1", adminToken, "", nil)
	if r.code != http.StatusOK {
		t.Fatalf("show: %s", r)
	}
	rows := map[string]map[string]any{}
	var order []string
	for _, it := range get(t, r.json(t), "host").([]any) {
		res := it.(map[string]any)["resource"].(map[string]any)
		if res["host"] != "kvm-1" {
			t.Errorf("row of another host: %v", res)
		}
		rows[res["project"].(string)] = res
		order = append(order, res["project"].(string))
	}
	if len(order) != 4 || order[0] != "(total)" || order[1] != "(used_now)" || order[2] != "(used_max)" {
		t.Fatalf("rows %v: %s", order, r.body)
	}
	want := func(project string, cpu, mem, disk float64) {
		t.Helper()
		row := rows[project]
		if row["cpu"] != cpu || row["memory_mb"] != mem || row["disk_gb"] != disk {
			t.Errorf("%s = %v, want cpu %v memory_mb %v disk_gb %v", project, row, cpu, mem, disk)
		}
	}
	want("(total)", 32, 65536, 500)
	want("(used_max)", 4, 4096, 50)
	want(order[3], 4, 4096, 50) // the servers' project
	hv := do(t, e.ts, http.MethodGet, computeBase+"/os-hypervisors/detail", adminToken, "", nil)
	kvm := hypervisorByName(t, get(t, hv.json(t), "hypervisors").([]any), "kvm-1")
	want("(used_now)", kvm["vcpus_used"].(float64), kvm["memory_mb_used"].(float64), kvm["local_gb_used"].(float64))

	// The peer's first compute node is an Ironic node (no resources of its
	// own, as Nova's Ironic driver shows it); its server is db-1.
	r = do(t, e.ts, http.MethodGet, computeBase+"/os-hosts/"+e.peer.Name, adminToken, "", nil)
	if r.code != http.StatusOK || get(t, r.json(t), "host", 0, "resource", "cpu") != 0.0 ||
		get(t, r.json(t), "host", 2, "resource", "project") != "(used_max)" || get(t, r.json(t), "host", 2, "resource", "cpu") != 1.0 {
		t.Fatalf("show the peer: %s", r)
	}

	before := e.digest()
	notMapped := "Host 'nope' is not mapped to any cell"
	for _, tc := range []struct {
		method, path, body string
		code               int
		key, message       string
	}{
		{http.MethodGet, "/os-hosts/nope", "", 404, "itemNotFound", notMapped},
		{http.MethodGet, "/os-hosts/nope/startup", "", 404, "itemNotFound", notMapped},
		{http.MethodGet, "/os-hosts/nope/reboot", "", 404, "itemNotFound", notMapped},
		{http.MethodPut, "/os-hosts/nope", `{"status": "enable"}`, 404, "itemNotFound", notMapped},
		{http.MethodGet, "/os-hosts/kvm-1/startup", "", 501, "notImplemented", "The requested functionality is not supported."},
		{http.MethodGet, "/os-hosts/kvm-1/shutdown", "", 501, "notImplemented", "The requested functionality is not supported."},
		{http.MethodGet, "/os-hosts/kvm-1/reboot", "", 501, "notImplemented", "The requested functionality is not supported."},
		{http.MethodPut, "/os-hosts/kvm-1", `{"status": "disable"}`, 501, "notImplemented", "The requested functionality is not supported."},
		{http.MethodPut, "/os-hosts/kvm-1", `{"maintenance_mode": "ENABLE"}`, 501, "notImplemented", "The requested functionality is not supported."},
		{http.MethodPut, "/os-hosts/kvm-1", `{"status": "bad-status"}`, 400, "badRequest",
			"Invalid input for field/attribute status. Value: bad-status. 'bad-status' is not one of ['enable', 'disable', 'Enable', 'Disable', 'ENABLE', 'DISABLE']"},
		{http.MethodPut, "/os-hosts/kvm-1", `{"maintenance_mode": "on"}`, 400, "badRequest",
			"Invalid input for field/attribute maintenance_mode. Value: on. 'on' is not one of ['enable', 'disable', 'Enable', 'Disable', 'ENABLE', 'DISABLE']"},
		{http.MethodPut, "/os-hosts/kvm-1", `{}`, 400, "badRequest", "{} is not valid under any of the given schemas"},
		// Tempest's client sends both keys, null unless given.
		{http.MethodPut, "/os-hosts/kvm-1", `{"status": null, "maintenance_mode": null}`, 400, "badRequest",
			"Invalid input for field/attribute status. Value: None. None is not of type 'string'"},
		{http.MethodPut, "/os-hosts/kvm-1", `{"status": "enable", "maintenance_mode": 1}`, 400, "badRequest",
			"Invalid input for field/attribute maintenance_mode. Value: 1. 1 is not of type 'string'"},
		{http.MethodPut, "/os-hosts/nope", `{"status": "enable", "maintenance_mode": "enable"}`, 404, "itemNotFound", notMapped},
		{http.MethodPut, "/os-hosts/kvm-1", `{"status": "enable", "maintenance_mode": null}`, 400, "badRequest", "None is not of type 'string'"},
		{http.MethodPut, "/os-hosts/nope", `{"status": "enable", "colour": "red"}`, 400, "badRequest", ""},
	} {
		r := do(t, e.ts, tc.method, computeBase+tc.path, adminToken, tc.body, mv("2.42"))
		if r.code != tc.code || tc.message != "" && !strings.HasSuffix(get(t, r.json(t), tc.key, "message").(string), tc.message) {
			t.Errorf("%s %s %s: %s, want %d %q", tc.method, tc.path, tc.body, r, tc.code, tc.message)
		}
	}
	// Gone from 2.43; an admin's only.
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodGet, "/os-hosts", ""}, {http.MethodGet, "/os-hosts/kvm-1", ""},
		{http.MethodGet, "/os-hosts/kvm-1/startup", ""}, {http.MethodPut, "/os-hosts/kvm-1", `{"status": "enable"}`},
	} {
		if r := do(t, e.ts, tc.method, computeBase+tc.path, adminToken, tc.body, mv("2.43")); r.code != http.StatusNotFound {
			t.Errorf("%s %s at 2.43: %s, want 404", tc.method, tc.path, r)
		}
		if r := do(t, e.ts, tc.method, computeBase+tc.path, readerToken, tc.body, nil); r.code != http.StatusForbidden {
			t.Errorf("%s %s as a reader: %s, want 403", tc.method, tc.path, r)
		}
	}
	if e.digest() != before {
		t.Fatal("refused host requests changed the state")
	}
}

// os-consoles: Nova removed it and answers its routes 410, for any caller
// and any server.
func TestConsolesGone(t *testing.T) {
	e := newEnv(t)
	const gone = "This resource is no longer available. No forwarding address is given."
	srv := computeBase + "/servers/6f1c2a70-0000-4000-8000-0000000000ff/consoles"
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodGet, srv, ""}, {http.MethodPost, srv, `{}`},
		{http.MethodGet, srv + "/1", ""}, {http.MethodDelete, srv + "/1", ""},
	} {
		for _, token := range []string{adminToken, readerToken} {
			r := do(t, e.ts, tc.method, tc.path, token, tc.body, nil)
			if r.code != http.StatusGone || get(t, r.json(t), "computeFault", "message") != gone || get(t, r.json(t), "computeFault", "code") != 410.0 {
				t.Errorf("%s %s: %s, want Nova's 410", tc.method, tc.path, r)
			}
		}
	}
}
