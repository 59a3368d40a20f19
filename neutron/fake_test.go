package neutron

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fake is a Keystone (password login with a catalog) and a Neutron (ports,
// networks, subnets) in one httptest server.
type fake struct {
	t   *testing.T
	srv *httptest.Server

	mu        sync.Mutex
	password  string
	catalog   bool            // the catalog lists the network service
	logins    int             // successful logins
	valid     map[string]bool // tokens Neutron accepts
	refuseAll bool            // Neutron answers 401 to every token
	noauth    bool            // Neutron wants no token
	down      bool            // Neutron answers 503 to everything
	requests  []string        // "METHOD path?query token"
	bodies    []map[string]any
	ports     map[string]map[string]any
	networks  []map[string]any
	nextID    int
}

func newFake(t *testing.T) *fake {
	f := &fake{t: t, password: "pw", catalog: true, valid: map[string]bool{}, ports: map[string]map[string]any{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) opts() Options {
	return Options{AuthType: AuthPassword, AuthURL: f.srv.URL + "/v3", Username: "corral", Password: "pw",
		ProjectName: "service", RegionName: "RegionOne", Timeout: 5 * time.Second}
}

func (f *fake) revokeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.valid = map[string]bool{}
}

func (f *fake) counts() (logins int, requests []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.logins, append([]string(nil), f.requests...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func neutronError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"NeutronError": map[string]any{"type": typ, "message": msg, "detail": ""}})
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path == "/v3/auth/tokens" && r.Method == http.MethodPost {
		f.login(w, r)
		return
	}
	var root string
	for _, p := range []string{"/public", "/internal", "/override"} {
		if strings.HasPrefix(r.URL.Path, p+"/v2.0/") {
			root = p
		}
	}
	if f.down && !strings.HasPrefix(r.URL.Path, "/v3/") {
		neutronError(w, http.StatusServiceUnavailable, "ServiceUnavailable", "down for the test")
		return
	}
	for _, p := range []string{"/public", "/internal", "/override"} {
		if r.URL.Path == p || r.URL.Path == p+"/" {
			writeJSON(w, 200, map[string]any{"versions": []any{map[string]any{"id": "v2.0", "status": "CURRENT",
				"links": []any{map[string]any{"href": f.srv.URL + p + "/v2.0/", "rel": "self"}}}}})
			return
		}
	}
	if root == "" {
		http.NotFound(w, r)
		return
	}
	tok := r.Header.Get("X-Auth-Token")
	f.requests = append(f.requests, fmt.Sprintf("%s %s %s", r.Method, r.URL.RequestURI(), tok))
	if !f.noauth && (f.refuseAll || !f.valid[tok]) {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{"code": 401, "message": "The request you have made requires authentication."}})
		return
	}
	var body map[string]any
	if r.Body != nil && (r.Method == http.MethodPost || r.Method == http.MethodPut) {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			neutronError(w, 400, "HTTPBadRequest", "bad JSON")
			return
		}
		f.bodies = append(f.bodies, body)
	}
	path := strings.TrimPrefix(r.URL.Path, root+"/v2.0/")
	switch {
	case path == "networks" && r.Method == http.MethodGet:
		var out []map[string]any
		for _, n := range f.networks {
			q := r.URL.Query()
			if p := q.Get("project_id"); p != "" && n["project_id"] != p {
				continue
			}
			if s := q.Get("shared"); s != "" && fmt.Sprint(n["shared"]) != s {
				continue
			}
			out = append(out, n)
		}
		writeJSON(w, 200, map[string]any{"networks": out})
	case path == "ports" && r.Method == http.MethodPost:
		p, _ := body["port"].(map[string]any)
		mac, _ := p["mac_address"].(string)
		for _, o := range f.ports {
			if mac != "" && o["mac_address"] == mac && o["network_id"] == p["network_id"] {
				neutronError(w, 409, "MacAddressInUse", "Unable to complete operation for network. The mac address "+mac+" is in use.")
				return
			}
		}
		f.nextID++
		p["id"] = fmt.Sprintf("port-%d", f.nextID)
		if mac == "" {
			p["mac_address"] = fmt.Sprintf("fa:16:3e:00:00:%02x", f.nextID)
		}
		p["status"] = "DOWN"
		p["binding:vif_type"] = "unbound"
		f.ports[p["id"].(string)] = p
		writeJSON(w, 201, map[string]any{"port": p})
	case path == "ports" && r.Method == http.MethodGet:
		out := []map[string]any{}
		for id := 1; id <= f.nextID; id++ {
			p, ok := f.ports[fmt.Sprintf("port-%d", id)]
			if !ok {
				continue
			}
			if d := r.URL.Query().Get("device_id"); d != "" && p["device_id"] != d {
				continue
			}
			out = append(out, p)
		}
		writeJSON(w, 200, map[string]any{"ports": out})
	case strings.HasPrefix(path, "ports/"):
		id := strings.TrimPrefix(path, "ports/")
		p, ok := f.ports[id]
		if !ok {
			neutronError(w, 404, "PortNotFound", "Port "+id+" could not be found.")
			return
		}
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, 200, map[string]any{"port": p})
		case http.MethodPut:
			for k, v := range body["port"].(map[string]any) {
				p[k] = v
				if k == "mac_address" && v == nil { // port-mac-address-regenerate
					f.nextID++
					p[k] = fmt.Sprintf("fa:16:3e:00:01:%02x", f.nextID)
				}
			}
			writeJSON(w, 200, map[string]any{"port": p})
		case http.MethodDelete:
			delete(f.ports, id)
			w.WriteHeader(204)
		}
	default:
		neutronError(w, 404, "HTTPNotFound", "no such resource "+path)
	}
}

func (f *fake) login(w http.ResponseWriter, r *http.Request) {
	var doc struct {
		Auth struct {
			Identity struct {
				Password struct {
					User struct {
						Name, Password string
					} `json:"user"`
				} `json:"password"`
			} `json:"identity"`
		} `json:"auth"`
	}
	if err := json.NewDecoder(r.Body).Decode(&doc); err != nil || doc.Auth.Identity.Password.User.Password != f.password {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{"code": 401, "message": "The request you have made requires authentication.", "title": "Unauthorized"}})
		return
	}
	f.logins++
	tok := fmt.Sprintf("tok-%d", f.logins)
	f.valid[tok] = true
	var catalog []any
	if f.catalog {
		catalog = append(catalog, map[string]any{"type": "network", "name": "neutron", "id": "n1", "endpoints": []any{
			map[string]any{"id": "e1", "interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": f.srv.URL + "/public"},
			map[string]any{"id": "e2", "interface": "internal", "region": "RegionOne", "region_id": "RegionOne", "url": f.srv.URL + "/internal/"},
			map[string]any{"id": "e3", "interface": "public", "region": "RegionTwo", "region_id": "RegionTwo", "url": f.srv.URL + "/elsewhere"},
		}})
	}
	now := time.Now().UTC()
	w.Header().Set("X-Subject-Token", tok)
	writeJSON(w, http.StatusCreated, map[string]any{"token": map[string]any{
		"methods": []string{"password"}, "issued_at": now.Format(time.RFC3339), "expires_at": now.Add(time.Hour).Format(time.RFC3339),
		"user":    map[string]any{"id": "u1", "name": "corral", "domain": map[string]any{"id": "default", "name": "Default"}},
		"project": map[string]any{"id": "p1", "name": "service", "domain": map[string]any{"id": "default", "name": "Default"}},
		"catalog": catalog, "roles": []any{map[string]any{"id": "r1", "name": "admin"}},
	}})
}
