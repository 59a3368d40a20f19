package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/glance"
	"github.com/corral-dev/corral/testkit"
)

const (
	activeImage = "7b5f2a1e-0000-4000-8000-000000000001"
	queuedImage = "7b5f2a1e-0000-4000-8000-000000000002"
	// Active images that need more than flavor f has: memory, a disk
	// (min_disk), a disk as large as their data.
	bigRAMImage  = "7b5f2a1e-0000-4000-8000-000000000003"
	bigDiskImage = "7b5f2a1e-0000-4000-8000-000000000004"
	bigDataImage = "7b5f2a1e-0000-4000-8000-000000000005"
)

// glanceServiceToken is corral's own token in Glance (staticSource).
const glanceServiceToken = "glance-service-token"

// staticSource is a glance.TokenSource with one token.
type staticSource string

func (s staticSource) Token(context.Context) (string, error) { return string(s), nil }
func (s staticSource) Refused(string)                        {}

// fakeGlance serves two images to requests carrying corral's service token.
func fakeGlance(t *testing.T) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Auth-Token") != glanceServiceToken {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		id := strings.TrimPrefix(r.URL.Path, "/v2/images/")
		switch id {
		case activeImage:
			fmt.Fprintf(w, `{"id": %q, "name": "ubuntu", "status": "active"}`, id)
		case queuedImage:
			fmt.Fprintf(w, `{"id": %q, "name": "empty", "status": "queued"}`, id)
		case bigRAMImage:
			fmt.Fprintf(w, `{"id": %q, "name": "big", "status": "active", "min_ram": 4096, "min_disk": 0, "size": 1024}`, id)
		case bigDiskImage:
			fmt.Fprintf(w, `{"id": %q, "name": "big", "status": "active", "min_ram": 0, "min_disk": 2, "size": 1024}`, id)
		case bigDataImage:
			fmt.Fprintf(w, `{"id": %q, "name": "big", "status": "active", "min_ram": 0, "min_disk": 0, "size": 2147483648}`, id)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestImageRefWithGlance(t *testing.T) {
	h := startCluster(t, 1)
	p := h.Leader(10 * time.Second)
	gc, err := glance.New(fakeGlance(t).URL, nil, glance.WithServiceToken(staticSource(glanceServiceToken)))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(api.Config{
		Tokens:   map[string]core.Role{adminToken: core.RoleAdmin, readerToken: core.RoleReader},
		Registry: p.Registry, Gatherer: p.Registry, Logger: slog.New(slog.DiscardHandler), Images: gc,
	}, p.Node)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	testkit.Eventually(t, 10*time.Second, func() error {
		if r := do(t, ts, "GET", "/readyz", "", "", nil); r.code != http.StatusOK {
			return fmt.Errorf("readyz %d", r.code)
		}
		return nil
	})
	waitSettled(t, p)
	if r := do(t, ts, http.MethodPost, computeBase+"/flavors", adminToken, `{"flavor": {"name": "f", "id": "f", "ram": 1, "vcpus": 1, "disk": 1}}`, nil); r.code != http.StatusOK {
		t.Fatalf("flavor: %s", r)
	}
	boot := func(image string) response {
		return do(t, ts, http.MethodPost, computeBase+"/servers", adminToken,
			`{"server": {"name": "a", "imageRef": "`+image+`", "flavorRef": "f"}}`, nil)
	}
	before := p.Node.Store().Digest()
	for image, want := range map[string]string{
		"img":                                  "not a Glance image id",
		"http://images/a.qcow2":                "not a Glance image id",
		queuedImage:                            "is not active",
		"7b5f2a1e-0000-4000-8000-0000000000ff": "could not be found",
		bigRAMImage:                            "Flavor's memory is too small for requested image.",
		bigDiskImage:                           "smaller than the minimum size specified in image metadata",
		bigDataImage:                           "Flavor's disk is too small for requested image.",
	} {
		r := boot(image)
		if r.code != http.StatusBadRequest || !strings.Contains(string(r.body), want) {
			t.Errorf("boot with %s: %s, want 400 saying %q", image, r, want)
		}
	}
	if p.Node.Store().Digest() != before {
		t.Fatal("refused boots changed the state")
	}
	r := boot("http://glance.example/v2/images/" + activeImage)
	if r.code != http.StatusAccepted {
		t.Fatalf("boot with an active image: %s", r)
	}
	id := get(t, r.json(t), "server", "id").(string)
	s, err := p.Node.Store().Server(id)
	if err != nil || s.ImageRef != activeImage {
		t.Fatalf("server %+v, %v: image_source must be the Glance id", s, err)
	}
	v := do(t, ts, http.MethodGet, computeBase+"/servers/"+id, adminToken, "", nil).json(t)
	if get(t, v, "server", "image", "id") != activeImage {
		t.Fatalf("image shown %v", get(t, v, "server", "image"))
	}
}

func TestImageRefWithoutImageService(t *testing.T) {
	e := newEnv(t)
	createFlavor(t, e, `{"flavor": {"name": "f", "id": "f", "ram": 1, "vcpus": 1, "disk": 1}}`)
	for _, image := range []string{"img", "http://images/a.qcow2", activeImage} {
		r := do(t, e.ts, http.MethodPost, computeBase+"/servers", adminToken,
			`{"server": {"name": "a", "imageRef": "`+image+`", "flavorRef": "f"}}`, nil)
		if r.code != http.StatusAccepted {
			t.Errorf("without an image service %s must pass to Ironic as is: %s", image, r)
		}
	}
}
