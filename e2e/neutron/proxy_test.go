package neutron

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// proxy stands between one agent and Neutron (the agent's [neutron]
// endpoint_override): it passes every request on, records the port
// creates the agent sends, and, while holding, keeps the answer to a port
// create from the agent once Neutron has made the port, as an answer
// lost on the way: the agent's request then ends only when the agent
// gives up on it or dies.
type proxy struct {
	name string
	srv  *httptest.Server
	rp   *httputil.ReverseProxy

	mu      sync.Mutex
	holding bool
	release chan struct{} // closed when the held answers are let go
	held    []string      // devices of the ports whose create answer is held now
	creates []created     // every port created through the proxy
}

// created is a port Neutron made on the agent's request.
type created struct{ device, port string }

func newProxy(t testing.TB, name, target string) *proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{name: name, rp: httputil.NewSingleHostReverseProxy(u), release: make(chan struct{})}
	p.srv = httptest.NewServer(p)
	t.Cleanup(func() {
		p.hold(false)
		p.srv.CloseClientConnections()
		p.srv.Close()
	})
	return p
}

// URL is the endpoint the agent is given.
func (p *proxy) URL() string { return p.srv.URL }

// hold starts or stops holding port create answers; stopping lets the
// held ones go.
func (p *proxy) hold(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.holding && !on {
		close(p.release)
		p.release = make(chan struct{})
		p.held = nil
	}
	p.holding = on
}

// heldDevices are the devices of the ports whose create answer is held.
func (p *proxy) heldDevices() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.held...)
}

// createdFor lists the ports created through the proxy for device.
func (p *proxy) createdFor(device string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, c := range p.creates {
		if c.device == device {
			out = append(out, c.port)
		}
	}
	return out
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(strings.TrimRight(r.URL.Path, "/"), "/v2.0/ports") {
		p.rp.ServeHTTP(w, r)
		return
	}
	// Neutron's answer reaches the proxy even when the agent has given up
	// on it (its create is bounded by its intent's lease).
	rec := httptest.NewRecorder()
	p.rp.ServeHTTP(rec, r.WithContext(context.WithoutCancel(r.Context())))
	var body struct {
		Port struct {
			ID       string `json:"id"`
			DeviceID string `json:"device_id"`
		} `json:"port"`
	}
	made := rec.Code == http.StatusCreated && json.Unmarshal(rec.Body.Bytes(), &body) == nil
	p.mu.Lock()
	release, holding := p.release, p.holding && made
	if made {
		p.creates = append(p.creates, created{device: body.Port.DeviceID, port: body.Port.ID})
	}
	if holding {
		p.held = append(p.held, body.Port.DeviceID)
	}
	p.mu.Unlock()
	if holding {
		select {
		case <-release:
		case <-r.Context().Done():
			return // the agent gave up or died: its answer is lost
		}
	}
	for k, vs := range rec.Header() {
		w.Header()[k] = vs
	}
	w.WriteHeader(rec.Code)
	_, _ = io.Copy(w, bytes.NewReader(rec.Body.Bytes()))
}
