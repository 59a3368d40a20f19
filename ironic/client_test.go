package ironic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/ironic/sim"
)

// pvProxy sits in front of a simulator: it records requests and injects faults that the
// simulator cannot (NodeLocked bodies, dropped connections, delays, rewritten node documents).
type pvProxy struct {
	h  http.Handler
	mu sync.Mutex
	// key "METHOD /path" -> how many responses to replace
	locked, abort map[string]int
	delayPrefix   string
	delay         time.Duration
	rewrite       map[string]func(map[string]any) // GET path -> edit of the JSON document
	log           []pvReq
}

type pvReq struct {
	method, path, version string
	status                int
}

func newPVProxy(h http.Handler) *pvProxy {
	return &pvProxy{h: h, locked: map[string]int{}, abort: map[string]int{}, rewrite: map[string]func(map[string]any){}}
}

func (p *pvProxy) take(m map[string]int, key string) bool {
	if m[key] > 0 {
		m[key]--
		return true
	}
	return false
}

func (p *pvProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.Path
	p.mu.Lock()
	locked, abort := p.take(p.locked, key), p.take(p.abort, key)
	delay := time.Duration(0)
	if p.delayPrefix != "" && strings.HasPrefix(r.URL.Path, p.delayPrefix) {
		delay = p.delay
	}
	rewrite := p.rewrite[r.URL.Path]
	i := len(p.log)
	p.log = append(p.log, pvReq{r.Method, r.URL.Path, r.Header.Get("X-OpenStack-Ironic-API-Version"), 0})
	p.mu.Unlock()
	rec := &pvRecorder{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		p.mu.Lock()
		p.log[i].status = rec.status
		p.mu.Unlock()
	}()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	switch {
	case abort:
		panic(http.ErrAbortHandler)
	case locked:
		rec.status = http.StatusConflict
		inner, _ := json.Marshal(map[string]any{"faultcode": "Client", "debuginfo": nil,
			"faultstring": "Node 1be26c0b-03f2-4d2e-ae87-c02d7f33c123 is locked by host proxy, please retry after the current operation is completed."})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_ = json.NewEncoder(w).Encode(map[string]string{"error_message": string(inner)})
	case rewrite != nil && r.Method == http.MethodGet:
		rw := httptest.NewRecorder()
		p.h.ServeHTTP(rw, r)
		var doc map[string]any
		if err := json.Unmarshal(rw.Body.Bytes(), &doc); err == nil && rw.Code == http.StatusOK {
			rewrite(doc)
		}
		hdr := w.Header()
		for k, v := range rw.Header() {
			hdr[k] = v
		}
		hdr.Del("Content-Length")
		rec.WriteHeader(rw.Code)
		_ = json.NewEncoder(w).Encode(doc)
	default:
		p.h.ServeHTTP(rec, r)
	}
}

// count returns how many requests matched method (empty = any) and path prefix and were answered
// with status (0 = any, including requests still in progress).
func (p *pvProxy) count(method, prefix string, status int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, q := range p.log {
		if (method == "" || q.method == method) && strings.HasPrefix(q.path, prefix) && (status == 0 || q.status == status) {
			n++
		}
	}
	return n
}

type pvRecorder struct {
	http.ResponseWriter
	status int
}

func (r *pvRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// pvSim starts a simulator behind a pvProxy.
func pvSim(t *testing.T, opts sim.Options) (*sim.Server, *pvProxy, string) {
	t.Helper()
	s := sim.New(opts)
	p := newPVProxy(s)
	ts := httptest.NewServer(p)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return s, p, ts.URL
}

var pvQuiet = slog.New(slog.DiscardHandler)

func TestClientOldIronic(t *testing.T) {
	s, _, url := pvSim(t, sim.Options{MaxVersion: "1.46"})
	ids := s.SeedNodes(2, "old-gold", "CUSTOM_X")
	c := pvClient(t, url, Options{Logger: pvQuiet})
	ctx := pvCtx(t, 10*time.Second)
	if c.Version() != "1.46" || c.SupportsAllocations() {
		t.Fatalf("version %s allocations %v", c.Version(), c.SupportsAllocations())
	}
	_, err := c.CreateAllocation(ctx, AllocationRequest{UUID: uuid.NewString(), ResourceClass: "old-gold"})
	pvWantErr(t, err, ErrUnsupported, "allocations need API 1.52, negotiated 1.46")
	_, err = c.GetAllocation(ctx, "x")
	pvWantErr(t, err, ErrUnsupported, "")
	_, err = c.WaitAllocation(ctx, "x")
	pvWantErr(t, err, ErrUnsupported, "")
	pvWantErr(t, c.DeleteAllocation(ctx, "x"), ErrUnsupported, "")

	nodes, err := c.ListNodes(ctx)
	pvNoErr(t, err)
	if len(nodes) != 2 || nodes[0].ResourceClass != "old-gold" || len(nodes[0].Traits) != 1 {
		t.Fatalf("nodes at 1.46: %+v", nodes)
	}
	// The old reservation works without allocations.
	inst := uuid.NewString()
	pvNoErr(t, c.ReserveNode(ctx, ids[0], inst))
	n, err := c.GetNode(ctx, ids[0])
	pvNoErr(t, err)
	if n.InstanceUUID != inst || n.ResourceClass != "old-gold" {
		t.Fatalf("node at 1.46: %+v", n)
	}
}

func TestClientVersionHeaderAndPaging(t *testing.T) {
	s, p, url := pvSim(t, sim.Options{})
	ids := s.SeedNodes(7, "page")
	c := pvClient(t, url, Options{Logger: pvQuiet, pageSize: 2, MaxVersion: "1.60"})
	ctx := pvCtx(t, 10*time.Second)
	nodes, err := c.ListNodes(ctx)
	pvNoErr(t, err)
	if len(nodes) != len(ids) {
		t.Fatalf("listed %d nodes, want %d", len(nodes), len(ids))
	}
	for i, n := range nodes {
		if n.UUID != ids[i] || n.Properties["cpu_arch"] != "x86_64" {
			t.Fatalf("node %d: %+v", i, n)
		}
	}
	if got := p.count(http.MethodGet, "/v1/nodes/detail", 200); got != 4 {
		t.Fatalf("%d pages, want 4", got)
	}
	_, err = c.GetNode(ctx, ids[0])
	pvNoErr(t, err)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, q := range p.log {
		want := "1.60"
		if q.path == "/" {
			want = ""
		}
		if q.version != want {
			t.Errorf("%s %s sent version %q, want %q", q.method, q.path, q.version, want)
		}
	}
}

func TestClientTransientRetries(t *testing.T) {
	s, p, url := pvSim(t, sim.Options{})
	ids := s.SeedNodes(1, "flaky")
	c := pvClient(t, url, Options{Logger: pvQuiet})
	ctx := pvCtx(t, 10*time.Second)
	path := "/v1/nodes/" + ids[0]

	s.FailNext(http.MethodGet, path, http.StatusServiceUnavailable, 2)
	_, err := c.GetNode(ctx, ids[0])
	pvNoErr(t, err)
	if got := s.Requests(http.MethodGet, path); got != 3 {
		t.Fatalf("GET requests %d, want 3", got)
	}

	s.FailNext(http.MethodGet, path, http.StatusServiceUnavailable, 1+transientRetries)
	_, err = c.GetNode(ctx, ids[0])
	pvWantErr(t, err, ErrUnavailable, "HTTP 503: Injected fault.")
	if got := s.Requests(http.MethodGet, path); got != 3+1+transientRetries {
		t.Fatalf("GET requests %d, want %d", got, 3+1+transientRetries)
	}

	// A dropped connection on a GET is retried too.
	p.mu.Lock()
	p.abort["GET "+path] = 1
	p.mu.Unlock()
	_, err = c.GetNode(ctx, ids[0])
	pvNoErr(t, err)

	// A PATCH is not idempotent: a 503 is returned at once.
	before := s.Requests(http.MethodPatch, path)
	s.FailNext(http.MethodPatch, path, http.StatusServiceUnavailable, 1)
	pvWantErr(t, c.ReserveNode(ctx, ids[0], uuid.NewString()), ErrUnavailable, "Injected fault.")
	if got := s.Requests(http.MethodPatch, path) - before; got != 1 {
		t.Fatalf("PATCH requests %d, want 1", got)
	}

	// An allocation with a UUID is idempotent: its POST is retried.
	s.FailNext(http.MethodPost, "/v1/allocations", http.StatusServiceUnavailable, 1)
	id := uuid.NewString()
	a, err := c.CreateAllocation(ctx, AllocationRequest{UUID: id, ResourceClass: "flaky"})
	pvNoErr(t, err)
	if a.UUID != id || s.Requests(http.MethodPost, "/v1/allocations") != 2 {
		t.Fatalf("allocation %+v after %d POSTs", a, s.Requests(http.MethodPost, "/v1/allocations"))
	}
}

func TestClientNodeLocked(t *testing.T) {
	s, p, url := pvSim(t, sim.Options{})
	ids := s.SeedNodes(1, "locked")
	ctx := pvCtx(t, 20*time.Second)
	path := "/v1/nodes/" + ids[0]
	inject := func(key string, n int) {
		p.mu.Lock()
		p.locked[key] = n
		p.mu.Unlock()
	}

	c := pvClient(t, url, Options{Logger: pvQuiet})
	inject("PATCH "+path, 2)
	inst := uuid.NewString()
	pvNoErr(t, c.ReserveNode(ctx, ids[0], inst))
	if got := p.count(http.MethodPatch, path, 0); got != 3 {
		t.Fatalf("PATCH requests %d, want 3", got)
	}
	inject("PUT "+path+"/states/provision", 3)
	pvNoErr(t, c.Deploy(ctx, ids[0], DeploySpec{ImageSource: "http://img/x"}))
	if got := p.count(http.MethodPut, path+"/states/provision", http.StatusConflict); got != 3 {
		t.Fatalf("locked provision answers %d, want 3", got)
	}
	_, err := c.WaitProvisionState(ctx, ids[0], "active")
	pvNoErr(t, err)

	few := pvClient(t, url, Options{Logger: pvQuiet, LockedRetries: 2})
	inject("PUT "+path+"/states/power", 5)
	start := time.Now()
	err = few.SetPowerState(ctx, ids[0], "power on")
	pvWantErr(t, err, ErrNodeLocked, "is locked by host proxy")
	if errors.Is(err, ErrConflict) || StatusOf(err) != http.StatusConflict {
		t.Fatalf("locked error: %v", err)
	}
	if got := p.count(http.MethodPut, path+"/states/power", 0); got != 3 {
		t.Fatalf("power requests %d, want 3", got)
	}
	if d := time.Since(start); d < 600*time.Millisecond {
		t.Fatalf("retries took %v: no backoff", d)
	}

	none := pvClient(t, url, Options{Logger: pvQuiet, LockedRetries: -1})
	inject("PUT "+path+"/states/power", 1)
	pvWantErr(t, none.SetPowerState(ctx, ids[0], "power on"), ErrNodeLocked, "")
}

// TestClientSimulatorLock: a node busy with a slow power action answers 409 NodeLocked itself.
func TestClientSimulatorLock(t *testing.T) {
	s, p, url := pvSim(t, sim.Options{PowerDelay: 700 * time.Millisecond, LockWait: 50 * time.Millisecond})
	ids := s.SeedNodes(1, "busy")
	c := pvClient(t, url, Options{Logger: pvQuiet})
	ctx := pvCtx(t, 10*time.Second)
	pvNoErr(t, c.SetPowerState(ctx, ids[0], "power on"))
	pvNoErr(t, c.ReserveNode(ctx, ids[0], uuid.NewString()))
	if got := p.count(http.MethodPatch, "/v1/nodes/"+ids[0], http.StatusConflict); got == 0 {
		t.Fatal("the simulator never answered NodeLocked")
	}
	n, err := c.GetNode(ctx, ids[0])
	pvNoErr(t, err)
	if n.PowerState != "power on" || n.TargetPowerState != "" || n.InstanceUUID == "" {
		t.Fatalf("node: %+v", n)
	}
}

func TestClientDeployFailed(t *testing.T) {
	s, p, url := pvSim(t, sim.Options{})
	ids := s.Seed([]sim.NodeSpec{{Name: "df-0", ResourceClass: "df", ProvisionState: "deploy failed"}, {Name: "df-1", ResourceClass: "df"}})
	c := pvClient(t, url, Options{Logger: pvQuiet, PollInterval: 10 * time.Millisecond})
	ctx := pvCtx(t, 10*time.Second)
	_, err := c.WaitProvisionState(ctx, ids[0], "active")
	pvWantErr(t, err, ErrDeployFailed, `provision state "deploy failed"`)
	pvNoErr(t, c.Undeploy(ctx, ids[0]))
	_, err = c.WaitProvisionState(ctx, ids[0], "available")
	pvNoErr(t, err)

	// A deployment that fails carries Ironic's last_error.
	pvNoErr(t, c.Deploy(ctx, ids[1], DeploySpec{ImageSource: "http://img/broken"}))
	p.mu.Lock()
	p.rewrite["/v1/nodes/"+ids[1]] = func(doc map[string]any) {
		doc["provision_state"], doc["target_provision_state"] = "deploy failed", "active"
		doc["last_error"] = "Failed to deploy: image checksum mismatch"
	}
	p.mu.Unlock()
	n, err := c.WaitProvisionState(ctx, ids[1], "active")
	pvWantErr(t, err, ErrDeployFailed, "image checksum mismatch")
	if n.ProvisionState != "deploy failed" || n.LastError != "Failed to deploy: image checksum mismatch" {
		t.Fatalf("node: %+v", n)
	}
}

func TestClientRequestTimeout(t *testing.T) {
	s, p, url := pvSim(t, sim.Options{})
	ids := s.SeedNodes(1, "slow")
	c := pvClient(t, url, Options{Logger: pvQuiet, RequestTimeout: 100 * time.Millisecond})
	p.mu.Lock()
	// Ironic answers after a minute: only the request timeout ends an
	// attempt before the call's own context (without it, one attempt
	// would wait until then).
	p.delayPrefix, p.delay = "/v1/nodes/", time.Minute
	p.mu.Unlock()
	_, err := c.GetNode(pvCtx(t, 30*time.Second), ids[0])
	pvWantErr(t, err, ErrUnavailable, "")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a deadline error, got %v", err)
	}
	if got := p.count(http.MethodGet, "/v1/nodes/", 0); got != 1+transientRetries {
		t.Fatalf("%d attempts, want %d", got, 1+transientRetries)
	}
}

func TestClientNewErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	pvNoErr(t, err)
	addr := l.Addr().String()
	l.Close()
	_, err = New(context.Background(), Options{URL: "http://" + addr, Logger: pvQuiet})
	pvWantErr(t, err, ErrUnavailable, "cannot reach Ironic at http://"+addr)
	for _, bad := range []string{"", "127.0.0.1:6385", "ftp://x"} {
		if _, err := New(context.Background(), Options{URL: bad}); err == nil || !strings.Contains(err.Error(), "invalid URL") {
			t.Errorf("URL %q: %v", bad, err)
		}
	}
	// An Ironic whose minimum version is above ours.
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"default_version": {"id": "v1", "version": "1.99", "min_version": "1.90"}}`)
	}))
	defer ts.Close()
	_, err = New(context.Background(), Options{URL: ts.URL, Logger: pvQuiet})
	pvWantErr(t, err, ErrUnsupported, "[1.90, 1.99]")
}

func TestClientMetricsAndConcurrency(t *testing.T) {
	s, _, url := pvSim(t, sim.Options{})
	ids := s.SeedNodes(3, "metrics")
	reg := prometheus.NewRegistry()
	c := pvClient(t, url, Options{Logger: pvQuiet, Registerer: reg})
	c2 := pvClient(t, url, Options{Logger: pvQuiet, Registerer: reg}) // shares the collectors
	ctx := pvCtx(t, 10*time.Second)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			cl := []*Client{c, c2}[i%2]
			if _, err := cl.GetNode(ctx, ids[i%3]); err != nil {
				t.Error(err)
			}
			if _, err := cl.ListNodes(ctx); err != nil {
				t.Error(err)
			}
			if _, err := cl.GetNode(ctx, "missing"); !errors.Is(err, ErrNotFound) {
				t.Errorf("missing node: %v", err)
			}
		})
	}
	wg.Wait()
	families, err := reg.Gather()
	pvNoErr(t, err)
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += " " + l.GetName() + "=" + l.GetValue()
			}
			if h := m.GetHistogram(); h != nil {
				got[key] = float64(h.GetSampleCount())
			} else {
				got[key] = m.GetCounter().GetValue()
			}
		}
	}
	for key, want := range map[string]float64{
		"corral_ironic_request_duration_seconds call=GetNode outcome=ok":    8,
		"corral_ironic_request_duration_seconds call=GetNode outcome=error": 8,
		"corral_ironic_request_duration_seconds call=ListNodes outcome=ok":  8,
		"corral_ironic_errors_total call=GetNode code=404":                  8,
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v (all: %v)", key, got[key], want, got)
		}
	}
}
