package failover

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// write is one mutating request a host sent to Ironic.
type write struct {
	Host   string // from User-Agent "corral-host/<name> ..."
	Method string
	Path   string
	At     time.Time
	Node   string // node ident from /v1/nodes/{ident}/...
	Alloc  string // allocation ident from /v1/allocations/{ident}, or the uuid a POST asks for
	Target string // provision target of PUT .../states/provision
	Power  string // power target of PUT .../states/power
	Status int    // the simulator's answer
	// RequestID is the caller's request id (X-OpenStack-Request-ID).
	RequestID string
}

func (w write) String() string {
	s := fmt.Sprintf("%s %s %s", w.At.Format("15:04:05.000"), w.Method, w.Path)
	if w.Target != "" {
		s += " target=" + w.Target
	}
	if w.Power != "" {
		s += " power=" + w.Power
	}
	return s + fmt.Sprintf(" -> %d", w.Status)
}

// recorder wraps the simulator and keeps every mutating request, so that a
// test can tell which host touched which node or allocation, and when.
type recorder struct {
	h  http.Handler
	mu sync.Mutex
	ws []write
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		wr := write{Method: req.Method, Path: req.URL.Path, At: time.Now(), RequestID: req.Header.Get("X-OpenStack-Request-ID")}
		if ua, ok := strings.CutPrefix(req.UserAgent(), "corral-host/"); ok {
			wr.Host, _, _ = strings.Cut(ua, " ")
		}
		seg := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
		var body []byte
		if req.Body != nil {
			body, _ = io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		if len(seg) >= 2 && seg[0] == "v1" {
			switch {
			case seg[1] == "nodes" && len(seg) >= 3:
				wr.Node = seg[2]
				if len(seg) == 5 && seg[3] == "states" && (seg[4] == "provision" || seg[4] == "power") {
					var b struct {
						Target string `json:"target"`
					}
					_ = json.Unmarshal(body, &b)
					if seg[4] == "power" {
						wr.Power = b.Target
					} else {
						wr.Target = b.Target
					}
				}
			case seg[1] == "allocations" && len(seg) >= 3:
				wr.Alloc = seg[2]
			case seg[1] == "allocations":
				var b struct {
					UUID string `json:"uuid"`
				}
				_ = json.Unmarshal(body, &b)
				wr.Alloc = b.UUID
			}
		}
		sw := &statusWriter{ResponseWriter: w}
		r.h.ServeHTTP(sw, req)
		wr.Status = sw.status
		r.mu.Lock()
		r.ws = append(r.ws, wr)
		r.mu.Unlock()
		return
	}
	r.h.ServeHTTP(w, req)
}

// statusWriter keeps the status of an answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// accepted returns the side effects Ironic accepted (2xx) on node whose
// provision target (or, with power set, power target) is target.
func (r *recorder) accepted(node, target string, power bool) []write {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []write
	for _, w := range r.ws {
		t := w.Target
		if power {
			t = w.Power
		}
		if w.Node == node && t == target && w.Status/100 == 2 {
			out = append(out, w)
		}
	}
	return out
}

// by returns the writes of host at or after since.
func (r *recorder) by(host string, since time.Time) []write {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []write
	for _, w := range r.ws {
		if w.Host == host && !w.At.Before(since) {
			out = append(out, w)
		}
	}
	return out
}

// touching returns the writes of host at or after since that concern one
// of the servers (server id → node uuid): its node or its allocation.
func (r *recorder) touching(host string, since time.Time, servers map[string]string) []write {
	nodes := map[string]bool{}
	for _, n := range servers {
		if n != "" {
			nodes[n] = true
		}
	}
	var out []write
	for _, w := range r.by(host, since) {
		if _, ok := servers[w.Alloc]; ok || nodes[w.Node] {
			out = append(out, w)
		}
	}
	return out
}

// provisions counts, per node, the requests (from any host) to move it to
// one of the provision targets (e.g. "active" to deploy, "deleted" to undeploy).
func (r *recorder) provisions(targets ...string) map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, w := range r.ws {
		if w.Target != "" && slices.Contains(targets, w.Target) {
			out[w.Node]++
		}
	}
	return out
}
