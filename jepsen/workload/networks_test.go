package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/cluster"
	"github.com/corral-dev/corral/jepsen/history"
)

// Every boot asks for the network, but one in Every gets a user's port
// instead, each port once, while they last.
func TestNetworksHandEachUserPortOnce(t *testing.T) {
	n := &Networks{Network: "net", Every: 2, ports: []string{"p1", "p2"}}
	var got []string
	for range 7 {
		r := n.next()
		if len(r) != 1 {
			t.Fatalf("networks %+v, want one", r)
		}
		got = append(got, r[0].Network+r[0].Port)
	}
	if s := strings.Join(got, " "); s != "net p1 net p2 net net net" {
		t.Fatalf("boots got %s", s)
	}
	if s := string(body([]history.NetRequest{{Network: "net"}, {Port: "p1"}})); s != `[{"uuid":"net"},{"port":"p1"}]` {
		t.Fatalf("body %s", s)
	}
}

// NewNetworks makes the ports as the user, named after the run; one that
// cannot be made is an error, with the ports made so far kept for removal.
func TestNewNetworksMakesTheUsersPorts(t *testing.T) {
	var mu sync.Mutex
	var names []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body client.NeutronPortCreate
		if r.Method != http.MethodPost || r.URL.Path != "/v2.0/ports" || r.Header.Get("X-Auth-Token") != "alice-token" ||
			json.NewDecoder(r.Body).Decode(&body) != nil || body.Port.NetworkID != "net" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if strings.HasSuffix(body.Port.Name, "-3") {
			http.Error(w, `{"NeutronError": {"type": "OverQuota"}}`, http.StatusConflict)
			return
		}
		mu.Lock()
		names = append(names, body.Port.Name)
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"port": map[string]string{"id": "id-" + body.Port.Name}})
	}))
	defer srv.Close()
	user := &client.Neutron{URL: srv.URL, HTTP: srv.Client(), Auth: func(context.Context) (string, error) { return "alice-token", nil }}
	nw, err := NewNetworks(context.Background(), user, "net", "jepsen-abc-port", 3, 4)
	if err != nil || len(nw.UserPorts()) != 3 || nw.Every != 4 {
		t.Fatalf("ports %v every %d err %v", nw.UserPorts(), nw.Every, err)
	}
	nw, err = NewNetworks(context.Background(), user, "net", "jepsen-abc-port", 5, 4)
	if err == nil || !strings.Contains(err.Error(), "OverQuota") || len(nw.UserPorts()) != 4 {
		t.Fatalf("ports %v err %v: want 4 made and the refusal", nw.UserPorts(), err)
	}
}

// A boot with -neutron sends its networks and records them in the
// invocation.
func TestBootSendsAndRecordsItsNetworks(t *testing.T) {
	var got client.ServerCreateRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, `{"server": {"id": "s-1"}}`)
	}))
	defer srv.Close()
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	p, _ := strconv.Atoi(port)
	cl := &cluster.Cluster{}
	peer := cl.Attach("n1", host, p)
	rec, err := history.NewRecorder(filepath.Join(t.TempDir(), "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	ops := &Ops{Cl: cl, API: client.NewCorral("tok", nil), Rec: rec, Timeout: 5 * time.Second, Flavor: "jepsen", Image: "img",
		Nets: &Networks{Network: "net", Every: 1, ports: []string{"p1"}}}
	ops.pool = newPool()
	if c := ops.bootOp(0, peer, "jepsen-c0-0"); c.Type != history.OK || c.Value.ID != "s-1" {
		t.Fatalf("boot %+v", c)
	}
	if string(got.Server.Networks) != `[{"port":"p1"}]` {
		t.Fatalf("boot sent networks %s", got.Server.Networks)
	}
	ops.bootOp(1, peer, "jepsen-c0-1")
	if string(got.Server.Networks) != `[{"uuid":"net"}]` {
		t.Fatalf("second boot sent networks %s", got.Server.Networks)
	}
	inv := rec.Ops()[0]
	if inv.Type != history.Invoke || len(inv.Value.Nets) != 1 || inv.Value.Nets[0].Port != "p1" {
		t.Fatalf("invocation %+v", inv)
	}
}

// With BootEvery, a boot asked for sooner after the last one is not sent.
func TestBootsAreSpaced(t *testing.T) {
	w := &Ops{BootEvery: 5 * time.Second}
	t0 := time.Date(2026, 12, 1, 17, 0, 0, 0, time.UTC)
	var got []bool
	for _, d := range []time.Duration{0, time.Second, 4 * time.Second, 5 * time.Second, 11 * time.Second} {
		got = append(got, w.bootSlot(t0.Add(d)))
	}
	if fmt.Sprint(got) != "[true false false true true]" {
		t.Fatalf("slots %v", got)
	}
	got = nil
	for _, d := range []time.Duration{0, 10 * time.Second, 20 * time.Second} {
		got = append(got, w.deleteSlot(t0.Add(d)))
	}
	if fmt.Sprint(got) != "[true false true]" {
		t.Fatalf("delete slots %v, want one every 20s", got)
	}
	none := &Ops{}
	if !none.bootSlot(t0) || !none.bootSlot(t0) || !none.deleteSlot(t0) || !none.deleteSlot(t0) {
		t.Fatal("without BootEvery every boot and delete is sent")
	}
}

// With MaxBusy, no boot is sent while the last linearizable list showed
// that many servers building or being deleted, counting the boots sent
// since.
func TestBootsWaitForBusyServers(t *testing.T) {
	w := &Ops{MaxBusy: 2}
	t0 := time.Date(2026, 12, 1, 17, 0, 0, 0, time.UTC)
	if !w.bootSlot(t0) || !w.bootSlot(t0) || w.bootSlot(t0) {
		t.Fatal("want two boots, then none until a list shows one done")
	}
	w.sawBusy([]history.ServerState{{ID: "a", Status: "ACTIVE"}, {ID: "b", Status: "BUILD"}, {ID: "c", Status: "ACTIVE", Task: "deleting"}})
	if w.bootSlot(t0) {
		t.Fatal("a boot sent while a server builds and one is deleted")
	}
	w.sawBusy([]history.ServerState{{ID: "a", Status: "ACTIVE"}, {ID: "b", Status: "BUILD"}})
	if !w.bootSlot(t0) || w.bootSlot(t0) {
		t.Fatal("want one boot beside the one building")
	}
}
