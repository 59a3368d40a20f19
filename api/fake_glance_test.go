package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// imageGlance is an in-memory Glance v2 of the image proxy's tests: its
// images are visible to their owner's tokens and, when public, to every
// token; corral's service token (glanceServiceToken) sees them all. It
// lists with Glance's equality filters, status, updated_at=gte:, marker
// and limit; reads; deletes (an owner's); and takes JSON patches of
// custom properties (its own attributes are read-only).
type imageGlance struct {
	t      *testing.T
	mu     sync.Mutex
	images []map[string]any // in creation order
	owners map[string]string
	seq    int
}

// glanceOwn are the attributes the fake's schema holds as Glance's own.
var glanceOwn = []string{"id", "name", "status", "visibility", "protected", "os_hidden", "checksum", "owner", "size",
	"virtual_size", "container_format", "disk_format", "created_at", "updated_at", "tags", "direct_url", "min_ram",
	"min_disk", "self", "file", "schema", "locations", "stores"}

// newImageGlance serves the fake; tokens maps the tokens it takes to
// their project.
func newImageGlance(t *testing.T, tokens map[string]string) (*imageGlance, *httptest.Server) {
	g := &imageGlance{t: t, owners: tokens}
	ts := httptest.NewServer(g)
	t.Cleanup(ts.Close)
	return g, ts
}

// add stores an image of project owner with the given attributes and
// properties, created and updated at, and returns its id.
func (g *imageGlance) add(owner, name, status, visibility string, at time.Time, extra map[string]any) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	id := fmt.Sprintf("7b5f2a1e-1000-4000-8000-%012d", g.seq)
	stamp := at.UTC().Format("2006-01-02T15:04:05Z")
	im := map[string]any{"id": id, "name": name, "status": status, "visibility": visibility, "owner": owner,
		"protected": false, "os_hidden": false, "size": 1024, "virtual_size": nil, "min_ram": 0, "min_disk": 0,
		"container_format": "bare", "disk_format": "raw", "created_at": stamp, "updated_at": stamp, "tags": []string{},
		"self": "/v2/images/" + id, "file": "/v2/images/" + id + "/file", "schema": "/v2/schemas/image", "stores": "file"}
	for k, v := range extra {
		im[k] = v
	}
	g.images = append(g.images, im)
	return id
}

// image returns a copy of image id as the fake holds it (nil: none).
func (g *imageGlance) image(id string) map[string]any {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, im := range g.images {
		if im["id"] == id {
			out := map[string]any{}
			for k, v := range im {
				out[k] = v
			}
			return out
		}
	}
	return nil
}

func (g *imageGlance) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	tok := r.Header.Get("X-Auth-Token")
	project, known := g.owners[tok]
	if !known && tok != glanceServiceToken {
		http.Error(w, "401 Unauthorized", http.StatusUnauthorized)
		return
	}
	sees := func(im map[string]any) bool {
		return tok == glanceServiceToken || im["visibility"] == "public" || im["owner"] == project
	}
	if r.URL.Path == "/v2/schemas/image" {
		props := map[string]any{"os_distro": map[string]any{"type": "string", "is_base": false}}
		for _, k := range glanceOwn {
			props[k] = map[string]any{"type": "string"}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"name": "image", "properties": props})
		return
	}
	if r.URL.Path == "/v2/images" && r.Method == http.MethodGet {
		g.list(w, r, sees)
		return
	}
	id := strings.TrimPrefix(r.URL.Path, "/v2/images/")
	i := slices.IndexFunc(g.images, func(im map[string]any) bool { return im["id"] == id && sees(im) })
	if i < 0 {
		http.Error(w, "404 Not Found\n\nNo image found with ID "+id+"\n\n   ", http.StatusNotFound)
		return
	}
	im := g.images[i]
	switch r.Method {
	case http.MethodGet:
		_ = json.NewEncoder(w).Encode(im)
	case http.MethodDelete:
		if im["owner"] != project && tok != glanceServiceToken {
			http.Error(w, "403 Forbidden\n\nYou are not permitted to delete this image.\n\n   ", http.StatusForbidden)
			return
		}
		g.images = slices.Delete(g.images, i, i+1)
		w.WriteHeader(http.StatusNoContent)
	case http.MethodPatch:
		g.patch(w, r, im, project, tok)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func (g *imageGlance) list(w http.ResponseWriter, r *http.Request, sees func(map[string]any) bool) {
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	var out []map[string]any
	started := q.Get("marker") == ""
	more := false
	for _, im := range g.images {
		if !started {
			started = im["id"] == q.Get("marker")
			continue
		}
		if !sees(im) || !g.matches(im, q) {
			continue
		}
		if len(out) == limit {
			more = true
			break
		}
		out = append(out, im)
	}
	if !started {
		http.Error(w, "400 Bad Request\n\nmarker not found", http.StatusBadRequest)
		return
	}
	body := map[string]any{"images": orEmptyList(out)}
	if more {
		body["next"] = "/v2/images?marker=" + fmt.Sprint(out[len(out)-1]["id"])
	}
	_ = json.NewEncoder(w).Encode(body)
}

func orEmptyList(l []map[string]any) []map[string]any {
	if l == nil {
		return []map[string]any{}
	}
	return l
}

// matches applies Glance's filters: updated_at=gte:TIME, every other one
// (but the paging's) equality.
func (g *imageGlance) matches(im map[string]any, q map[string][]string) bool {
	for k, vs := range q {
		v := vs[0]
		switch k {
		case "limit", "marker":
		case "updated_at":
			t, err := time.Parse(time.RFC3339, strings.TrimPrefix(v, "gte:"))
			u, _ := time.Parse(time.RFC3339, im["updated_at"].(string))
			if err != nil || u.Before(t) {
				return false
			}
		default:
			if fmt.Sprint(im[k]) != v {
				return false
			}
		}
	}
	return true
}

func (g *imageGlance) patch(w http.ResponseWriter, r *http.Request, im map[string]any, project, tok string) {
	if ct := r.Header.Get("Content-Type"); ct != "application/openstack-images-v2.1-json-patch" {
		http.Error(w, "415 Unsupported Media Type", http.StatusUnsupportedMediaType)
		return
	}
	if im["owner"] != project && tok != glanceServiceToken {
		http.Error(w, "403 Forbidden\n\nYou are not permitted to modify this image.", http.StatusForbidden)
		return
	}
	var ops []struct {
		Op    string  `json:"op"`
		Path  string  `json:"path"`
		Value *string `json:"value"`
	}
	if err := json.NewDecoder(r.Body).Decode(&ops); err != nil {
		http.Error(w, "400 Bad Request", http.StatusBadRequest)
		return
	}
	next := map[string]any{}
	for k, v := range im {
		next[k] = v
	}
	for _, op := range ops {
		name := strings.NewReplacer("~1", "/", "~0", "~").Replace(strings.TrimPrefix(op.Path, "/"))
		if slices.Contains(glanceOwn, name) {
			http.Error(w, "403 Forbidden\n\nAttribute '"+name+"' is read-only.", http.StatusForbidden)
			return
		}
		_, has := next[name]
		switch {
		case op.Op == "remove" && has:
			delete(next, name)
		case (op.Op == "add" || op.Op == "replace" && has) && op.Value != nil:
			next[name] = *op.Value
		default:
			http.Error(w, "409 Conflict\n\nProperty "+name+" does not exist.", http.StatusConflict)
			return
		}
	}
	next["updated_at"] = time.Now().UTC().Format("2006-01-02T15:04:05Z")
	for k := range im {
		delete(im, k)
	}
	for k, v := range next {
		im[k] = v
	}
	_ = json.NewEncoder(w).Encode(im)
}
