package api_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/fsm/placement"
	"github.com/corral-dev/corral/wire"
)

func mv(v string) map[string]string {
	return map[string]string{"OpenStack-API-Version": "compute " + v}
}

func (e *env) propose(cmd fsm.Command) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.peer.Node.Propose(ctx, cmd); err != nil {
		e.t.Fatalf("propose %s: %v", cmd.Type(), err)
	}
}

func TestComputeServicesList(t *testing.T) {
	e := newEnv(t)
	r := do(t, e.ts, http.MethodGet, computeBase+"/os-services", adminToken, "", mv("2.53"))
	if r.code != http.StatusOK {
		t.Fatalf("list: %s", r)
	}
	v := r.json(t)
	if n := len(get(t, v, "services").([]any)); n != 1 {
		t.Fatalf("%d services, want 1: %s", n, r.body)
	}
	svc := get(t, v, "services", 0).(map[string]any)
	id, _ := svc["id"].(string)
	if uuid.Validate(id) != nil || svc["binary"] != "nova-compute" || svc["host"] != e.peer.Name ||
		svc["state"] != "up" || svc["status"] != "enabled" || svc["zone"] != "nova" || svc["forced_down"] != false ||
		svc["disabled_reason"] != nil || svc["updated_at"] == "" {
		t.Fatalf("service at 2.53 = %v", svc)
	}
	again := do(t, e.ts, http.MethodGet, computeBase+"/os-services", adminToken, "", mv("2.60"))
	if get(t, again.json(t), "services", 0, "id") != id {
		t.Fatalf("the service id changed between reads: %s then %s", r.body, again.body)
	}

	old := do(t, e.ts, http.MethodGet, computeBase+"/os-services", adminToken, "", nil).json(t)
	if _, isInt := get(t, old, "services", 0, "id").(float64); !isInt {
		t.Fatalf("below 2.53 the id must be an integer: %v", old)
	}
	if _, has := get(t, old, "services", 0).(map[string]any)["forced_down"]; has {
		t.Fatalf("forced_down shown below 2.11: %v", old)
	}

	for q, want := range map[string]int{"?binary=nova-compute": 1, "?binary=nova-scheduler": 0,
		"?host=" + e.peer.Name: 1, "?host=elsewhere": 0} {
		r := do(t, e.ts, http.MethodGet, computeBase+"/os-services"+q, adminToken, "", mv("2.53"))
		if n := len(get(t, r.json(t), "services").([]any)); n != want {
			t.Errorf("%s: %d services, want %d: %s", q, n, want, r.body)
		}
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/os-services", readerToken, "", nil); r.code != http.StatusForbidden {
		t.Errorf("reader listing services: %s", r)
	}
}

func serviceID(t *testing.T, e *env) string {
	t.Helper()
	r := do(t, e.ts, http.MethodGet, computeBase+"/os-services?host="+e.peer.Name, adminToken, "", mv("2.53"))
	return get(t, r.json(t), "services", 0, "id").(string)
}

func TestComputeServiceDisableEnable(t *testing.T) {
	e := newEnv(t)
	id := serviceID(t, e)
	path := computeBase + "/os-services/" + id

	r := do(t, e.ts, http.MethodPut, path, adminToken, `{"status": "disabled", "disabled_reason": "rack 4 maintenance"}`, mv("2.53"))
	if r.code != http.StatusOK {
		t.Fatalf("disable: %s", r)
	}
	v := r.json(t)
	if get(t, v, "service", "status") != "disabled" || get(t, v, "service", "disabled_reason") != "rack 4 maintenance" ||
		get(t, v, "service", "id") != id {
		t.Fatalf("disable answered %s", r.body)
	}
	h, err := e.peer.Node.Store().Host(e.peer.Name)
	if err != nil || !h.Drained || h.DrainReason != "rack 4 maintenance" {
		t.Fatalf("after disable the host is %+v, %v; want drained with the reason", h, err)
	}
	listed := do(t, e.ts, http.MethodGet, computeBase+"/os-services", adminToken, "", mv("2.53")).json(t)
	if get(t, listed, "services", 0, "status") != "disabled" || get(t, listed, "services", 0, "disabled_reason") != "rack 4 maintenance" {
		t.Fatalf("list after disable: %v", listed)
	}

	before := e.digest()
	for _, bad := range []string{`{"status": "enabled", "disabled_reason": "x"}`, `{"status": "paused"}`, `{}`,
		`{"disabled_reason": "x"}`, `{"status": "disabled", "color": "red"}`} {
		r := do(t, e.ts, http.MethodPut, path, adminToken, bad, mv("2.53"))
		if r.code != http.StatusBadRequest {
			t.Errorf("PUT %s: %s, want 400", bad, r)
		} else if key, _ := errorMessage(t, r); key != "badRequest" {
			t.Errorf("PUT %s: error key %q", bad, key)
		}
	}
	if r := do(t, e.ts, http.MethodPut, computeBase+"/os-services/not-a-uuid", adminToken, `{"status": "enabled"}`, mv("2.53")); r.code != http.StatusBadRequest {
		t.Errorf("non-UUID id: %s", r)
	}
	if r := do(t, e.ts, http.MethodPut, computeBase+"/os-services/"+uuid.NewString(), adminToken, `{"status": "enabled"}`, mv("2.53")); r.code != http.StatusNotFound {
		t.Errorf("unknown id: %s", r)
	}
	if r := do(t, e.ts, http.MethodPut, path, readerToken, `{"status": "enabled"}`, mv("2.53")); r.code != http.StatusForbidden {
		t.Errorf("reader: %s", r)
	}
	if e.digest() != before {
		t.Fatal("a refused update changed the state")
	}

	r = do(t, e.ts, http.MethodPut, path, adminToken, `{"status": "enabled"}`, mv("2.53"))
	if r.code != http.StatusOK || get(t, r.json(t), "service", "status") != "enabled" || get(t, r.json(t), "service", "disabled_reason") != nil {
		t.Fatalf("enable: %s", r)
	}
	if h, _ := e.peer.Node.Store().Host(e.peer.Name); h.Drained || h.DrainReason != "" {
		t.Fatalf("after enable the host is %+v", h)
	}
}

func TestComputeServiceForceDown(t *testing.T) {
	e := newEnv(t)
	r := do(t, e.ts, http.MethodPut, computeBase+"/os-services/"+serviceID(t, e), adminToken, `{"forced_down": true}`, mv("2.53"))
	if r.code != http.StatusOK {
		t.Fatalf("force down: %s", r)
	}
	v := r.json(t)
	if get(t, v, "service", "forced_down") != true || get(t, v, "service", "state") != "down" {
		t.Fatalf("force down answered %s", r.body)
	}
	// The host is alive: the leader brings it back up after the up grace.
	waitHostUp(t, e)
}

func waitHostUp(t *testing.T, e *env) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		h, err := e.peer.Node.Store().Host(e.peer.Name)
		if err == nil && h.Status == fsm.HostUp {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("host %s never came back up: %+v %v", e.peer.Name, h, err)
		}
		<-time.After(50 * time.Millisecond)
	}
}

func TestComputeServiceLegacyActions(t *testing.T) {
	e := newEnv(t)
	body := func(extra string) string {
		return `{"host": "` + e.peer.Name + `", "binary": "nova-compute"` + extra + `}`
	}
	r := do(t, e.ts, http.MethodPut, computeBase+"/os-services/disable-log-reason", adminToken, body(`, "disabled_reason": "bios update"`), mv("2.11"))
	if r.code != http.StatusOK || get(t, r.json(t), "service", "status") != "disabled" || get(t, r.json(t), "service", "disabled_reason") != "bios update" {
		t.Fatalf("disable-log-reason: %s", r)
	}
	if h, _ := e.peer.Node.Store().Host(e.peer.Name); !h.Drained || h.DrainReason != "bios update" {
		t.Fatalf("after disable-log-reason the host is %+v", h)
	}
	r = do(t, e.ts, http.MethodPut, computeBase+"/os-services/enable", adminToken, body(""), nil)
	if r.code != http.StatusOK || get(t, r.json(t), "service", "status") != "enabled" {
		t.Fatalf("enable: %s", r)
	}
	if h, _ := e.peer.Node.Store().Host(e.peer.Name); h.Drained {
		t.Fatalf("after enable the host is %+v", h)
	}
	r = do(t, e.ts, http.MethodPut, computeBase+"/os-services/disable", adminToken, body(""), nil)
	if h, _ := e.peer.Node.Store().Host(e.peer.Name); r.code != http.StatusOK || !h.Drained {
		t.Fatalf("disable: %s; host %+v", r, h)
	}

	before := e.digest()
	if r := do(t, e.ts, http.MethodPut, computeBase+"/os-services/reboot", adminToken, body(""), nil); r.code != http.StatusNotFound {
		t.Errorf("unknown action: %s", r)
	}
	if r := do(t, e.ts, http.MethodPut, computeBase+"/os-services/force-down", adminToken, body(`, "forced_down": true`), nil); r.code != http.StatusNotFound {
		t.Errorf("force-down below 2.11: %s", r)
	}
	if r := do(t, e.ts, http.MethodPut, computeBase+"/os-services/enable", adminToken, `{"host": "`+e.peer.Name+`", "binary": "nova-scheduler"}`, nil); r.code != http.StatusBadRequest {
		t.Errorf("another binary: %s", r)
	}
	if r := do(t, e.ts, http.MethodPut, computeBase+"/os-services/enable", adminToken, `{"host": "nowhere", "binary": "nova-compute"}`, nil); r.code != http.StatusNotFound {
		t.Errorf("unknown host: %s", r)
	}
	if r := do(t, e.ts, http.MethodPut, computeBase+"/os-services/disable", adminToken, body(""), mv("2.53")); r.code != http.StatusBadRequest {
		t.Errorf("an action name at 2.53 is not a UUID: %s", r)
	}
	if e.digest() != before {
		t.Fatal("a refused action changed the state")
	}

	r = do(t, e.ts, http.MethodPut, computeBase+"/os-services/force-down", adminToken, body(`, "forced_down": true`), mv("2.11"))
	if r.code != http.StatusOK || get(t, r.json(t), "service", "forced_down") != true {
		t.Fatalf("force-down: %s", r)
	}
	waitHostUp(t, e)
}

// hypervisorEnv is an env with two Ironic nodes, one of them held by an
// adopted server, and a hypervisor host with inventory.
func hypervisorEnv(t *testing.T) (e *env, held, free string) {
	t.Helper()
	e = newEnv(t)
	held, free = "6fae68da-108b-4a9d-87c4-000000000001", "6fae68da-108b-4a9d-87c4-000000000002"
	const inst = "a1b2c3d4-0000-4000-8000-000000000001"
	e.propose(&fsm.SyncNodes{Upserts: []fsm.Node{
		{UUID: held, ResourceClass: "baremetal", ProvisionState: "active", PowerState: "power on", InstanceUUID: inst, AllocationUUID: inst},
		{UUID: free, ResourceClass: "baremetal", ProvisionState: "available", PowerState: "power off", Maintenance: true},
	}})
	body := `{"id": "` + inst + `", "name": "db-1", "image_ref": "http://images/db.qcow2", "node_uuid": "` + held + `",
		"allocation_uuid": "` + inst + `", "flavor": {"id": "bm", "name": "bm", "vcpus": 1, "ram": 1, "disk": 1,
		"extra_specs": {"resources:CUSTOM_BAREMETAL": "1"}}}`
	if r := do(t, e.ts, http.MethodPost, wire.AdoptServerPath, adminToken, body, nil); r.code != http.StatusCreated {
		t.Fatalf("adopt: %s", r)
	}
	e.propose(&fsm.RegisterHost{Name: "kvm-1", RaftAddr: "127.0.0.99:1", APIAddr: "127.0.0.99:2", Kind: fsm.KindHypervisor})
	inv := func(n int64) placement.Inventory {
		return placement.Inventory{Total: n, MinUnit: 1, MaxUnit: n, StepSize: 1, AllocationRatio: 1}
	}
	e.propose(&fsm.ReportInventory{Host: "kvm-1", Inventory: map[string]placement.Inventory{
		"VCPU": inv(32), "MEMORY_MB": inv(65536), "DISK_GB": inv(500)}})
	return e, held, free
}

func hypervisorByName(t *testing.T, list []any, name string) map[string]any {
	t.Helper()
	for _, h := range list {
		if m := h.(map[string]any); m["hypervisor_hostname"] == name {
			return m
		}
	}
	t.Fatalf("no hypervisor %s in %v", name, list)
	return nil
}

func TestHypervisors(t *testing.T) {
	e, held, free := hypervisorEnv(t)
	svcID := serviceID(t, e)

	r := do(t, e.ts, http.MethodGet, computeBase+"/os-hypervisors", adminToken, "", mv("2.53"))
	if r.code != http.StatusOK {
		t.Fatalf("list: %s", r)
	}
	list := get(t, r.json(t), "hypervisors").([]any)
	if len(list) != 3 {
		t.Fatalf("%d hypervisors, want 3 (two nodes, one VM host): %s", len(list), r.body)
	}
	h := hypervisorByName(t, list, held)
	if h["id"] != held || h["state"] != "up" || h["status"] != "enabled" {
		t.Fatalf("held node's hypervisor = %v", h)
	}
	if _, has := h["hypervisor_type"]; has {
		t.Fatalf("the plain list shows details: %v", h)
	}
	if f := hypervisorByName(t, list, free); f["status"] != "disabled" {
		t.Fatalf("a node in maintenance must be disabled: %v", f)
	}

	d := do(t, e.ts, http.MethodGet, computeBase+"/os-hypervisors/detail", adminToken, "", mv("2.53"))
	dl := get(t, d.json(t), "hypervisors").([]any)
	hd := hypervisorByName(t, dl, held)
	if hd["hypervisor_type"] != "ironic" || get(t, hd, "service", "host") != e.peer.Name ||
		get(t, hd, "service", "id") != svcID || hd["running_vms"] != float64(1) {
		t.Fatalf("held node's detail = %v", hd)
	}
	fd := hypervisorByName(t, dl, free)
	if get(t, fd, "service", "host") != e.peer.Name || fd["running_vms"] != float64(0) {
		t.Fatalf("a free node belongs to the one Ironic host: %v", fd)
	}
	kvm := hypervisorByName(t, dl, "kvm-1")
	if kvm["hypervisor_type"] != "fake" || kvm["vcpus"] != float64(32) || kvm["memory_mb"] != float64(65536) ||
		kvm["id"] != fsm.HostProviderUUID("kvm-1") || get(t, kvm, "service", "host") != "kvm-1" {
		t.Fatalf("hypervisor host's detail = %v", kvm)
	}

	s := do(t, e.ts, http.MethodGet, computeBase+"/os-hypervisors/"+held+"?with_servers=true", adminToken, "", mv("2.53"))
	if s.code != http.StatusOK || get(t, s.json(t), "hypervisor", "hypervisor_type") != "ironic" ||
		get(t, s.json(t), "hypervisor", "servers", 0, "name") != "db-1" {
		t.Fatalf("show with servers: %s", s)
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/os-hypervisors/"+held+"?with_servers=maybe", adminToken, "", mv("2.53")); r.code != http.StatusBadRequest {
		t.Errorf("with_servers=maybe: %s", r)
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/os-hypervisors/1", adminToken, "", mv("2.53")); r.code != http.StatusBadRequest {
		t.Errorf("an integer id at 2.53: %s", r)
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/os-hypervisors/"+uuid.NewString(), adminToken, "", mv("2.53")); r.code != http.StatusNotFound {
		t.Errorf("unknown id: %s", r)
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/os-hypervisors/"+held+"/uptime", adminToken, "", mv("2.53")); r.code != http.StatusNotImplemented {
		t.Errorf("uptime: %s", r)
	} else if key, _ := errorMessage(t, r); key != "notImplemented" {
		t.Errorf("uptime: %s, want Nova's notImplemented", r.body)
	}

	// Before 2.53, integer ids that show finds again.
	old := do(t, e.ts, http.MethodGet, computeBase+"/os-hypervisors", adminToken, "", nil).json(t)
	oh := hypervisorByName(t, get(t, old, "hypervisors").([]any), held)
	oid, isInt := oh["id"].(float64)
	if !isInt {
		t.Fatalf("below 2.53 the id must be an integer: %v", oh)
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/os-hypervisors/"+formatInt(oid), adminToken, "", nil); r.code != http.StatusOK ||
		get(t, r.json(t), "hypervisor", "hypervisor_hostname") != held {
		t.Fatalf("show by integer id: %s", r)
	}

	// Paging and the name pattern.
	p := do(t, e.ts, http.MethodGet, computeBase+"/os-hypervisors?limit=1", adminToken, "", mv("2.53")).json(t)
	if n := len(get(t, p, "hypervisors").([]any)); n != 1 {
		t.Fatalf("limit=1 gave %d", n)
	}
	first := get(t, p, "hypervisors", 0, "id").(string)
	p2 := do(t, e.ts, http.MethodGet, computeBase+"/os-hypervisors?limit=5&marker="+first, adminToken, "", mv("2.53")).json(t)
	if n := len(get(t, p2, "hypervisors").([]any)); n != 2 {
		t.Fatalf("after the marker %d, want 2: %v", n, p2)
	}
	if _, ok := p["hypervisors_links"]; !ok {
		t.Fatalf("limit=1 without a next link: %v", p)
	}
	pat := do(t, e.ts, http.MethodGet, computeBase+"/os-hypervisors?hypervisor_hostname_pattern=kvm", adminToken, "", mv("2.53")).json(t)
	if n := len(get(t, pat, "hypervisors").([]any)); n != 1 {
		t.Fatalf("pattern kvm gave %d: %v", n, pat)
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/os-hypervisors?hypervisor_hostname_pattern=nope", adminToken, "", mv("2.53")); r.code != http.StatusNotFound {
		t.Errorf("pattern without a match: %s", r)
	}

	// Draining the only Ironic host disables its nodes' hypervisors; the
	// free node stays with it, as a compute node with its disabled service.
	e.propose(&fsm.SetHostDrain{Name: e.peer.Name, Drained: true, Reason: "swap"})
	dl = get(t, do(t, e.ts, http.MethodGet, computeBase+"/os-hypervisors/detail", adminToken, "", mv("2.53")).json(t), "hypervisors").([]any)
	if hd := hypervisorByName(t, dl, held); hd["status"] != "disabled" || get(t, hd, "service", "disabled_reason") != "swap" {
		t.Fatalf("held node on a drained host: %v", hd)
	}
	if fd := hypervisorByName(t, dl, free); get(t, fd, "service", "host") != e.peer.Name || fd["status"] != "disabled" {
		t.Fatalf("free node with no undrained Ironic host: %v", fd)
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/os-hypervisors", readerToken, "", nil); r.code != http.StatusForbidden {
		t.Errorf("reader: %s", r)
	}
}

func formatInt(f float64) string { return strconv.FormatInt(int64(f), 10) }
