package api_test

import (
	"crypto/sha1"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/fsm/placement"
)

// The hypervisors' search, servers and statistics; extensions; usage;
// x509 key pairs.

func TestHypervisorSearchServersStatistics(t *testing.T) {
	e, held, free := hypervisorEnv(t)
	hv := computeBase + "/os-hypervisors"
	r := do(t, e.ts, http.MethodGet, hv+"/"+held[:8]+"/search", adminToken, "", nil)
	if r.code != http.StatusOK {
		t.Fatalf("search: %s", r)
	}
	list := get(t, r.json(t), "hypervisors").([]any)
	if len(list) != 2 || hypervisorByName(t, list, held)["servers"] != nil {
		t.Fatalf("search of the nodes' common prefix: %s", r.body)
	}
	r = do(t, e.ts, http.MethodGet, hv+"/"+held[:8]+"/servers", adminToken, "", mv("2.52"))
	list = get(t, r.json(t), "hypervisors").([]any)
	if r.code != http.StatusOK || len(list) != 2 {
		t.Fatalf("servers: %s", r)
	}
	if s := hypervisorByName(t, list, held)["servers"]; fmt.Sprint(s) != "[map[name:db-1 uuid:"+adoptedID+"]]" {
		t.Errorf("servers of the held node: %v", s)
	}
	if _, has := hypervisorByName(t, list, free)["servers"]; has {
		t.Error("a hypervisor without servers shows servers, as Nova before 2.75 does not")
	}
	for _, path := range []string{hv + "/nothing-like-it/search", hv + "/nothing-like-it/servers"} {
		if r := do(t, e.ts, http.MethodGet, path, adminToken, "", nil); r.code != http.StatusNotFound ||
			!strings.Contains(string(r.body), "No hypervisor matching 'nothing-like-it' could be found.") {
			t.Errorf("%s: %s", path, r)
		}
		if r := do(t, e.ts, http.MethodGet, strings.Replace(path, "nothing-like-it", "kvm", 1), adminToken, "", mv("2.53")); r.code != http.StatusNotFound {
			t.Errorf("%s at 2.53: %s, want 404", path, r)
		}
		if r := do(t, e.ts, http.MethodGet, path, readerToken, "", nil); r.code != http.StatusForbidden {
			t.Errorf("%s by a reader: %s", path, r)
		}
	}

	r = do(t, e.ts, http.MethodGet, hv+"/statistics", adminToken, "", mv("2.79"))
	st := get(t, r.json(t), "hypervisor_statistics").(map[string]any)
	// Two Ironic nodes (no VCPU, RAM or disk, as Nova's Ironic driver) and
	// one VM host of 32 VCPUs, 64 GiB and 500 GB; one server, on a node.
	want := map[string]float64{"count": 3, "vcpus": 32, "vcpus_used": 0, "memory_mb": 65536, "free_ram_mb": 65536,
		"local_gb": 500, "free_disk_gb": 500, "running_vms": 1, "current_workload": 0}
	for k, v := range want {
		if st[k] != v {
			t.Errorf("statistics %s = %v, want %v (%s)", k, st[k], v, r.body)
		}
	}
}

func TestExtensions(t *testing.T) {
	e := newEnv(t)
	r := do(t, e.ts, http.MethodGet, computeBase+"/extensions", readerToken, "", nil)
	if r.code != http.StatusOK {
		t.Fatalf("list: %s", r)
	}
	var aliases []string
	for _, x := range get(t, r.json(t), "extensions").([]any) {
		aliases = append(aliases, x.(map[string]any)["alias"].(string))
	}
	joined := strings.Join(aliases, " ")
	for _, want := range []string{"os-keypairs", "os-hypervisors", "os-server-groups", "os-instance-actions", "os-simple-tenant-usage", "os-hosts", "os-consoles"} {
		if !strings.Contains(joined, want) {
			t.Errorf("extensions lack %s: %v", want, aliases)
		}
	}
	for _, absent := range []string{"os-volumes", "os-floating-ips", "os-rescue", "os-security-groups"} {
		if strings.Contains(joined, absent) {
			t.Errorf("extensions list %s, which corral does not implement", absent)
		}
	}
	for alias, name := range map[string]string{"os-server-groups": "ServerGroups", "os-hosts": "Hosts", "os-consoles": "Consoles"} {
		r = do(t, e.ts, http.MethodGet, computeBase+"/extensions/"+alias, readerToken, "", nil)
		if r.code != http.StatusOK || get(t, r.json(t), "extension", "name") != name || get(t, r.json(t), "extension", "alias") != alias {
			t.Fatalf("show %s: %s", alias, r)
		}
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/extensions/os-volumes", readerToken, "", nil); r.code != http.StatusNotFound {
		t.Fatalf("show an extension corral lacks: %s", r)
	}
}

func TestSimpleTenantUsage(t *testing.T) {
	e := cliKeystoneEnv(t)
	vmHost(e.env)
	boot := func(token string) string {
		r := do(t, e.ts, http.MethodPost, computeBase+"/servers", token,
			`{"server": {"name": "u", "imageRef": "http://img/a", "flavorRef": "pub", "networks": "none"}}`, nil)
		if r.code != http.StatusAccepted {
			t.Fatalf("boot: %s", r)
		}
		return get(t, r.json(t), "server", "id").(string)
	}
	a1, a2, b1 := boot(memberA), boot(memberA), boot(memberB)
	if r := do(t, e.ts, http.MethodDelete, computeBase+"/servers/"+a2, memberA, "", nil); r.code != http.StatusNoContent {
		t.Fatalf("delete: %s", r)
	}
	if s, err := e.peer.Node.Store().Server(a2); err == nil { // the owner's part of the delete
		e.propose(&fsm.SetServerTask{ID: a2, Host: s.Host, Epoch: s.Epoch, Status: fsm.StatusDeleted})
	}
	period := func(from, to time.Time) string {
		return "?" + url.Values{"start": {from.UTC().Format("2006-01-02T15:04:05")}, "end": {to.UTC().Format("2006-01-02T15:04:05.999999")}}.Encode()
	}
	now := time.Now()
	q := period(now.Add(-time.Hour), now.Add(time.Hour))
	r := do(t, e.ts, http.MethodGet, computeBase+"/os-simple-tenant-usage"+q+"&detailed=1", adminToken, "", nil)
	if r.code != http.StatusOK {
		t.Fatalf("list: %s", r)
	}
	usages := get(t, r.json(t), "tenant_usages").([]any)
	if len(usages) != 2 {
		t.Fatalf("usages of two projects: %s", r.body)
	}
	ids := map[string]bool{}
	for _, u := range usages {
		for _, s := range u.(map[string]any)["server_usages"].([]any) {
			ids[s.(map[string]any)["instance_id"].(string)] = true
		}
	}
	if !ids[a1] || !ids[b1] {
		t.Errorf("usage lacks servers: %v", ids)
	}
	r = do(t, e.ts, http.MethodGet, computeBase+"/os-simple-tenant-usage/demo-a"+q, memberA, "", nil)
	if r.code != http.StatusOK || get(t, r.json(t), "tenant_usage", "tenant_id") != "demo-a" {
		t.Fatalf("show own: %s", r)
	}
	for _, su := range get(t, r.json(t), "tenant_usage", "server_usages").([]any) {
		if m := su.(map[string]any); m["instance_id"] == a2 && (m["state"] != "terminated" || m["ended_at"] == nil) {
			t.Errorf("deleted server's usage: %v", m)
		}
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/os-simple-tenant-usage/demo-a"+q, memberB, "", nil); r.code != http.StatusForbidden {
		t.Errorf("another project's usage: %s", r)
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/os-simple-tenant-usage"+q, memberA, "", nil); r.code != http.StatusForbidden {
		t.Errorf("a member lists every project's usage: %s", r)
	}
	// Nothing used in a period before the servers: {} as in Nova.
	old := period(now.Add(-48*time.Hour), now.Add(-47*time.Hour))
	if r := do(t, e.ts, http.MethodGet, computeBase+"/os-simple-tenant-usage/demo-a"+old, memberA, "", nil); string(r.body) != "{\"tenant_usage\":{}}\n" {
		t.Errorf("usage of an empty period: %s", r)
	}
	for _, bad := range []string{period(now, now.Add(-time.Hour)), "?start=yesterday", "?end=2020-13-01T00:00:00"} {
		if r := do(t, e.ts, http.MethodGet, computeBase+"/os-simple-tenant-usage"+bad, adminToken, "", nil); r.code != http.StatusBadRequest {
			t.Errorf("period %s: %s", bad, r)
		}
	}
	// 2.40 pages by instance.
	r = do(t, e.ts, http.MethodGet, computeBase+"/os-simple-tenant-usage"+q+"&detailed=1&limit=1", adminToken, "", mv("2.40"))
	links, _ := get(t, r.json(t), "tenant_usages_links").([]any)
	if len(links) != 1 || !strings.Contains(fmt.Sprint(links), "marker=") {
		t.Fatalf("page of one at 2.40: %s", r.body)
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/os-simple-tenant-usage"+q+"&marker=nope", adminToken, "", mv("2.40")); r.code != http.StatusBadRequest {
		t.Errorf("unknown marker: %s", r)
	}
}

// vmHost registers kvm-1, a hypervisor host with room for VM flavors,
// so that the env's servers get an owner.
func vmHost(e *env) {
	e.propose(&fsm.RegisterHost{Name: "kvm-1", RaftAddr: "127.0.0.99:1", APIAddr: "127.0.0.99:2", Kind: fsm.KindHypervisor})
	inv := func(n int64) placement.Inventory {
		return placement.Inventory{Total: n, MinUnit: 1, MaxUnit: n, StepSize: 1, AllocationRatio: 1}
	}
	e.propose(&fsm.ReportInventory{Host: "kvm-1", Inventory: map[string]placement.Inventory{
		"VCPU": inv(32), "MEMORY_MB": inv(65536), "DISK_GB": inv(500)}})
}

func TestKeyPairX509(t *testing.T) {
	e := newEnv(t)
	kp := computeBase + "/os-keypairs"
	r := do(t, e.ts, http.MethodPost, kp, adminToken, `{"keypair": {"name": "win", "type": "x509"}}`, mv("2.2"))
	if r.code != http.StatusCreated || get(t, r.json(t), "keypair", "type") != "x509" {
		t.Fatalf("generate x509: %s", r)
	}
	cert := get(t, r.json(t), "keypair", "public_key").(string)
	block, _ := pem.Decode([]byte(cert))
	if block == nil {
		t.Fatalf("public key is not PEM: %q", cert)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil || c.Subject.CommonName != "admin" || len(c.ExtKeyUsage) != 1 || c.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth {
		t.Fatalf("certificate %+v: %v", c, err)
	}
	sum := sha1.Sum(block.Bytes)
	fp := fmt.Sprintf("% x", sum[:])
	if got := get(t, r.json(t), "keypair", "fingerprint"); got != strings.ReplaceAll(fp, " ", ":") {
		t.Errorf("fingerprint %v, want the SHA-1 of the certificate %s", got, fp)
	}
	priv, _ := pem.Decode([]byte(get(t, r.json(t), "keypair", "private_key").(string)))
	if priv == nil {
		t.Fatal("no private key")
	}
	if _, err := x509.ParsePKCS8PrivateKey(priv.Bytes); err != nil {
		t.Fatalf("private key: %v", err)
	}
	// Imported as Nova takes one: the PEM certificate.
	body := fmt.Sprintf(`{"keypair": {"name": "imported", "type": "x509", "public_key": %q}}`, cert)
	r = do(t, e.ts, http.MethodPost, kp, adminToken, body, mv("2.2"))
	if r.code != http.StatusCreated || get(t, r.json(t), "keypair", "fingerprint") != strings.ReplaceAll(fp, " ", ":") {
		t.Fatalf("import x509: %s", r)
	}
	before := e.digest()
	for _, bad := range []string{
		`{"keypair": {"name": "b1", "type": "x509", "public_key": "` + testPubKey + `"}}`,
		`{"keypair": {"name": "b2", "type": "x509", "public_key": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"}}`,
	} {
		if r := do(t, e.ts, http.MethodPost, kp, adminToken, bad, mv("2.2")); r.code != http.StatusBadRequest ||
			!strings.Contains(string(r.body), "failed to generate X509 fingerprint") {
			t.Errorf("POST %s: %s", bad, r)
		}
	}
	if r := do(t, e.ts, http.MethodPost, kp, adminToken, `{"keypair": {"name": "b3", "type": "x509"}}`, mv("2.1")); r.code != http.StatusBadRequest {
		t.Errorf("x509 at 2.1: %s", r)
	}
	if e.digest() != before {
		t.Fatal("refused key pairs changed the state")
	}
}
