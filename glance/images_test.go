package glance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// pagedGlance serves images img-0 ... img-(n-1) in pages of at most the
// request's limit, as Glance pages them (next while more are left), a
// schema, a patch and deletes; it records every request.
type pagedGlance struct {
	mu   sync.Mutex
	n    int
	reqs []*http.Request
	body []string
}

func (g *pagedGlance) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	g.mu.Lock()
	g.reqs, g.body = append(g.reqs, r), append(g.body, string(b))
	g.mu.Unlock()
	switch {
	case r.URL.Path == "/v2/schemas/image":
		fmt.Fprint(w, `{"name": "image", "properties": {"id": {"type": "string"}, "name": {"type": ["null", "string"]},
			"kernel_id": {"type": ["null", "string"], "is_base": false}, "min_ram": {"type": "integer"}}}`)
	case r.URL.Path == "/v2/images" && r.Method == http.MethodGet:
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		start := 0
		if m := r.URL.Query().Get("marker"); m != "" {
			start, _ = strconv.Atoi(strings.TrimPrefix(m, "img-"))
			start++
		}
		var page []map[string]any
		for i := start; i < g.n && len(page) < limit; i++ {
			page = append(page, map[string]any{"id": fmt.Sprintf("img-%d", i), "name": r.URL.Query().Get("name")})
		}
		out := map[string]any{"images": page}
		if start+len(page) < g.n {
			out["next"] = "/v2/images?marker=whatever"
		}
		_ = json.NewEncoder(w).Encode(out)
	case r.URL.Path == "/v2/images/img-1" && r.Method == http.MethodPatch:
		fmt.Fprint(w, `{"id": "img-1", "os_distro": "debian"}`)
	case r.URL.Path == "/v2/images/img-1" && r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	case r.URL.Path == "/v2/images/mine":
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, "403 Forbidden\n\nYou are not permitted to delete this image.\n\n   ")
	case r.URL.Path == "/v2/images/used":
		w.WriteHeader(http.StatusConflict)
	case r.URL.Path == "/v2/images/bad":
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, "400 Bad Request\n\nAttribute 'min_ram' is read-only.\n\n   ")
	default:
		http.NotFound(w, r)
	}
}

func (g *pagedGlance) requests() ([]*http.Request, []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, b := g.reqs, g.body
	g.reqs, g.body = nil, nil
	return r, b
}

func TestListImagesPages(t *testing.T) {
	g := &pagedGlance{n: 2500}
	ts := httptest.NewServer(g)
	defer ts.Close()
	c, err := New(ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	all, err := c.ListImages(ctx, "tok", url.Values{"name": {"web"}}, 0)
	if err != nil || len(all) != 2500 || all[2499].ID() != "img-2499" || all[0]["name"] != "web" {
		t.Fatalf("all images: %d, %v", len(all), err)
	}
	reqs, _ := g.requests()
	if len(reqs) != 3 || reqs[0].URL.Query().Get("limit") != "1000" || reqs[1].URL.Query().Get("marker") != "img-999" ||
		reqs[2].URL.Query().Get("name") != "web" || reqs[0].Header.Get("X-Auth-Token") != "tok" {
		t.Fatalf("%d requests, the first %v", len(reqs), reqs[0].URL)
	}
	some, err := c.ListImages(ctx, "tok", url.Values{"marker": {"img-4"}}, 3)
	if err != nil || len(some) != 3 || some[0].ID() != "img-5" {
		t.Fatalf("3 images after img-4: %v, %v", some, err)
	}
	if reqs, _ := g.requests(); len(reqs) != 1 || reqs[0].URL.Query().Get("limit") != "3" {
		t.Fatalf("3 images: %d requests", len(reqs))
	}
}

func TestImageChanges(t *testing.T) {
	g := &pagedGlance{}
	ts := httptest.NewServer(g)
	defer ts.Close()
	c, err := New(ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v := "debian"
	d, err := c.PatchImage(ctx, "tok", "img-1", []PatchOp{{Op: "add", Path: PropertyPath("os_distro"), Value: &v},
		{Op: "remove", Path: PropertyPath("a/b~c")}})
	if err != nil || d["os_distro"] != "debian" {
		t.Fatalf("patch: %v, %v", d, err)
	}
	reqs, bodies := g.requests()
	if reqs[0].Method != http.MethodPatch || reqs[0].Header.Get("Content-Type") != "application/openstack-images-v2.1-json-patch" ||
		bodies[0] != `[{"op":"add","path":"/os_distro","value":"debian"},{"op":"remove","path":"/a~1b~0c"}]` {
		t.Fatalf("patch sent %s %s %s", reqs[0].Method, reqs[0].Header.Get("Content-Type"), bodies[0])
	}
	if err := c.DeleteImage(ctx, "tok", "img-1"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	for id, want := range map[string]error{"mine": ErrUnauthorized, "used": ErrConflict, "gone": ErrNotFound, "bad": ErrInvalid} {
		if err := c.DeleteImage(ctx, "tok", id); !errors.Is(err, want) {
			t.Errorf("delete %s: %v, want %v", id, err, want)
		}
	}
	if _, err := c.PatchImage(ctx, "tok", "bad", nil); err == nil || !strings.HasSuffix(err.Error(), ": Attribute 'min_ram' is read-only.") {
		t.Errorf("Glance's explanation is not in the error: %v", err)
	}
	if _, err := c.ImageDoc(ctx, "tok", "gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("read of no image: %v", err)
	}
	g.requests()
	for range 2 {
		base, err := c.BaseAttributes(ctx, "tok")
		if err != nil || !base["id"] || !base["min_ram"] || base["kernel_id"] || len(base) != 3 {
			t.Fatalf("base attributes %v, %v", base, err)
		}
	}
	if reqs, _ := g.requests(); len(reqs) != 1 {
		t.Fatalf("the schema was read %d times, want once", len(reqs))
	}
}
