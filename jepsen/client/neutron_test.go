package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// Ports follows Neutron's next links; a 404 is ErrNeutronNotFound, and a
// delete of a port already gone is no error.
func TestNeutronPortsPagesAndErrors(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("X-Auth-Token") != "tok":
			http.Error(w, "no", http.StatusUnauthorized)
		case r.URL.Path == "/v2.0/ports" && r.URL.Query().Get("marker") == "":
			if r.URL.Query().Get("network_id") != "net" {
				http.Error(w, "filter lost", http.StatusBadRequest)
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"ports": []NeutronPort{{ID: "p1"}}, "ports_links": []map[string]string{
				{"rel": "next", "href": srv.URL + "/v2.0/ports?network_id=net&marker=p1"}}})
		case r.URL.Path == "/v2.0/ports":
			_ = json.NewEncoder(w).Encode(map[string]any{"ports": []NeutronPort{{ID: "p2", FixedIPs: []NeutronFixedIP{{IPAddress: "192.0.2.5"}}}},
				"ports_links": []map[string]string{{"rel": "previous", "href": srv.URL + "/v2.0/ports?marker=p2&page_reverse=True"}}})
		case r.Method == http.MethodDelete || r.URL.Path == "/v2.0/networks/gone":
			http.Error(w, `{"NeutronError": {"type": "PortNotFound"}}`, http.StatusNotFound)
		default:
			http.Error(w, "unexpected", http.StatusTeapot)
		}
	}))
	defer srv.Close()
	n := &Neutron{URL: srv.URL, HTTP: srv.Client(), Auth: func(context.Context) (string, error) { return "tok", nil }}
	ps, err := n.Ports(context.Background(), url.Values{"network_id": {"net"}})
	if err != nil || len(ps) != 2 || ps[0].ID != "p1" || ps[1].IPs()[0] != "192.0.2.5" {
		t.Fatalf("ports %+v err %v", ps, err)
	}
	if _, err := n.Network(context.Background(), "gone"); !errors.Is(err, ErrNeutronNotFound) {
		t.Fatalf("err %v, want ErrNeutronNotFound", err)
	}
	if err := n.DeletePort(context.Background(), "gone"); err != nil {
		t.Fatalf("delete of a port already gone: %v", err)
	}
	bad := &Neutron{URL: srv.URL, HTTP: srv.Client(), Auth: func(context.Context) (string, error) { return "stale", nil }}
	if _, err := bad.Ports(context.Background(), url.Values{"network_id": {"net"}}); err == nil {
		t.Fatal("a token refused twice was taken")
	}
}
