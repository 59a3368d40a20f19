package neutron

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// revNeutron is a noauth Neutron of one port that honours If-Match:
// revision_number as Neutron does (412 RevisionNumberConstraintFailed) and
// raises the revision at every change.
type revNeutron struct {
	mu      sync.Mutex
	port    map[string]any // nil: deleted
	queries []string
	bodies  []map[string]any
	ifMatch []string
}

func (f *revNeutron) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	path := strings.TrimPrefix(r.URL.Path, "/v2.0/")
	switch {
	case path == "ports" && r.Method == http.MethodGet:
		f.queries = append(f.queries, r.URL.RawQuery)
		var out []any
		if f.port != nil && f.port["description"] == r.URL.Query().Get("description") {
			out = append(out, f.port)
		}
		writeJSON(w, 200, map[string]any{"ports": out})
		return
	case path != "ports/p1":
		http.NotFound(w, r)
		return
	}
	if f.port == nil {
		neutronError(w, 404, "PortNotFound", "Port p1 could not be found.")
		return
	}
	if r.Method == http.MethodGet {
		writeJSON(w, 200, map[string]any{"port": f.port})
		return
	}
	f.ifMatch = append(f.ifMatch, r.Header.Get("If-Match"))
	rev := f.port["revision_number"].(int)
	if want, ok := strings.CutPrefix(r.Header.Get("If-Match"), "revision_number="); ok && want != strconv.Itoa(rev) {
		neutronError(w, http.StatusPreconditionFailed, "RevisionNumberConstraintFailed",
			"Constrained to "+want+", but current revision is "+strconv.Itoa(rev))
		return
	}
	switch r.Method {
	case http.MethodDelete:
		f.port = nil
		w.WriteHeader(http.StatusNoContent)
	case http.MethodPut:
		var body map[string]map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			neutronError(w, 400, "HTTPBadRequest", "bad JSON")
			return
		}
		f.bodies = append(f.bodies, body["port"])
		for k, v := range body["port"] {
			if k == "mac_address" && v == nil {
				v = "fa:16:3e:00:00:99" // Neutron's new MAC
			}
			f.port[k] = v
		}
		f.port["revision_number"] = rev + 1
		writeJSON(w, 200, map[string]any{"port": f.port})
	}
}

func newRevNeutron(t *testing.T) (*revNeutron, *Client) {
	t.Helper()
	f := &revNeutron{port: map[string]any{"id": "p1", "network_id": "net-1", "description": CreatedByCorral,
		"device_id": "srv-1", "device_owner": "compute:nova", "mac_address": "52:54:00:aa:00:01",
		"binding:host_id": "node-1", "binding:profile": map[string]any{"local_link_information": []any{}},
		"revision_number": 4, "created_at": "2026-12-01T10:00:00Z", "updated_at": "2026-12-01T10:05:00Z"}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	return f, mustNew(t, Options{AuthType: AuthNone, EndpointOverride: srv.URL, Timeout: 5 * time.Second})
}

// The ports corral marked are listed by Neutron's own filter, with their
// description, revision and timestamps.
func TestPortsDescribed(t *testing.T) {
	f, c := newRevNeutron(t)
	ctx := context.Background()
	got, err := c.PortsDescribed(ctx, CreatedByCorral)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.queries) != 1 || f.queries[0] != "description=corral" {
		t.Errorf("queries %q, want the description filtered by Neutron", f.queries)
	}
	if len(got) != 1 || got[0].ID != "p1" || got[0].DeviceID != "srv-1" || got[0].Description != CreatedByCorral ||
		got[0].RevisionNumber != 4 || !got[0].UpdatedAt.Equal(time.Date(2026, 12, 1, 10, 5, 0, 0, time.UTC)) ||
		!got[0].CreatedAt.Equal(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("listed %+v", got)
	}
	if _, err := c.PortsDescribed(ctx, ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("a listing without a description = %v, want ErrInvalid", err)
	}
	if s, err := c.PortState(ctx, "p1"); err != nil || s.RevisionNumber != 4 || s.HostID != "node-1" {
		t.Fatalf("PortState = %+v, %v", s, err)
	}
}

// A delete at a revision the port has left is refused (ErrChanged) and
// deletes nothing; at the current one it deletes; a port gone is no error.
func TestDeletePortAtRevision(t *testing.T) {
	f, c := newRevNeutron(t)
	ctx := context.Background()
	err := c.DeletePortAtRevision(ctx, "p1", 3)
	if !errors.Is(err, ErrChanged) || errors.Is(err, ErrUnavailable) || ErrorType(err) != "RevisionNumberConstraintFailed" {
		t.Fatalf("delete at an old revision = %v (type %q), want ErrChanged", err, ErrorType(err))
	}
	if f.port == nil {
		t.Fatal("a port changed since was deleted")
	}
	if err := c.DeletePortAtRevision(ctx, "p1", 4); err != nil {
		t.Fatal(err)
	}
	if f.port != nil {
		t.Fatal("the port is still there")
	}
	if err := c.DeletePortAtRevision(ctx, "p1", 4); err != nil {
		t.Fatalf("deleting a port already gone = %v", err)
	}
	if want := []string{"revision_number=3", "revision_number=4"}; !reflect.DeepEqual(f.ifMatch, want) {
		t.Errorf("If-Match sent %q, want %q", f.ifMatch, want)
	}
}

// A release empties the device, owner and host and clears the profile at
// the revision read, then asks Neutron for a new MAC at the revision the
// first update left; at an old revision it changes nothing.
func TestReleasePortAtRevision(t *testing.T) {
	f, c := newRevNeutron(t)
	ctx := context.Background()
	if _, err := c.ReleasePortAtRevision(ctx, "p1", 2); !errors.Is(err, ErrChanged) {
		t.Fatalf("release at an old revision = %v, want ErrChanged", err)
	}
	if len(f.bodies) != 0 || f.port["device_id"] != "srv-1" {
		t.Fatalf("a refused release changed the port: %v", f.port)
	}
	p, err := c.ReleasePortAtRevision(ctx, "p1", 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"device_id": "", "device_owner": "", "binding:host_id": "", "binding:profile": map[string]any{}},
		{"mac_address": nil},
	}
	if !reflect.DeepEqual(f.bodies, want) {
		t.Errorf("updates sent %v, want %v", f.bodies, want)
	}
	if w := []string{"revision_number=2", "revision_number=4", "revision_number=5"}; !reflect.DeepEqual(f.ifMatch, w) {
		t.Errorf("If-Match sent %q, want %q", f.ifMatch, w)
	}
	if p.DeviceID != "" || p.HostID != "" || p.MACAddress != "fa:16:3e:00:00:99" || p.RevisionNumber != 6 {
		t.Errorf("released port %+v", p)
	}
}
