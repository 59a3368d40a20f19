package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/glance"
)

// imagesEnv is cliKeystoneEnv whose API reaches an imageGlance that takes
// memberA's token (demo-a) and memberB's (demo-b), with four images:
// a public one of another project, two of demo-a (one a snapshot of a
// server, still saving) and one of demo-b.
type imagesEnv struct {
	*keystoneEnv
	g                          *imageGlance
	public, snap, mine, theirs string
}

const snapServer = "a1b2c3d4-0000-4000-8000-00000000000f"

var imagesEpoch = time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)

func newImagesEnv(t *testing.T) *imagesEnv {
	t.Helper()
	g, ts := newImageGlance(t, map[string]string{memberA: "demo-a", memberB: "demo-b"})
	gc, err := glance.New(ts.URL, nil, glance.WithServiceToken(staticSource(glanceServiceToken)))
	if err != nil {
		t.Fatal(err)
	}
	e := &imagesEnv{g: g}
	e.public = g.add("admin", "cirros", "active", "public", imagesEpoch,
		map[string]any{"min_ram": 512, "min_disk": 1, "os_distro": "cirros", "auto_disk_config": "False"})
	e.snap = g.add("demo-a", "web-snap", "saving", "private", imagesEpoch.Add(time.Hour),
		map[string]any{"instance_uuid": snapServer, "image_type": "snapshot", "size": nil})
	e.mine = g.add("demo-a", "web", "active", "private", imagesEpoch.Add(2*time.Hour), nil)
	e.theirs = g.add("demo-b", "db", "active", "private", imagesEpoch.Add(3*time.Hour), nil)
	ks := newKeystoneEnv(t, time.Minute, func(c *api.Config) { c.Images = gc })
	ks.ks.issue(memberA, "ann", "demo-a", "member", "reader")
	ks.ks.issue(memberB, "ben", "demo-b", "member", "reader")
	e.keystoneEnv = ks
	return e
}

func (e *imagesEnv) get(t *testing.T, token, path, version string) response {
	t.Helper()
	return do(t, e.ts, http.MethodGet, computeBase+path, token, "", mv(version))
}

func imageIDs(t *testing.T, r response) []string {
	t.Helper()
	if r.code != http.StatusOK {
		t.Fatalf("list: %s", r)
	}
	var ids []string
	for _, im := range get(t, r.json(t), "images").([]any) {
		ids = append(ids, im.(map[string]any)["id"].(string))
	}
	return ids
}

// Nova's image proxy (GET /images, /images/detail, /images/{id}, up to
// 2.35): Glance's images the caller's token sees, in Nova's view, with
// Nova's filters mapped to Glance's.
func TestImagesProxyList(t *testing.T) {
	e := newImagesEnv(t)
	r := e.get(t, memberA, "/images", "2.35")
	if got := strings.Join(imageIDs(t, r), " "); got != strings.Join([]string{e.public, e.snap, e.mine}, " ") {
		t.Fatalf("demo-a's images %s", got)
	}
	brief := get(t, r.json(t), "images", 0).(map[string]any)
	if len(brief) != 3 || brief["name"] != "cirros" || len(brief["links"].([]any)) != 3 {
		t.Fatalf("brief view %v", brief)
	}
	alt := get(t, brief, "links", 2).(map[string]any)
	if alt["rel"] != "alternate" || alt["type"] != "application/vnd.openstack.image" ||
		!strings.HasSuffix(alt["href"].(string), "/images/"+e.public) {
		t.Fatalf("alternate link %v", alt)
	}

	r = e.get(t, memberA, "/images/detail", "2.35")
	imageIDs(t, r)
	pub := get(t, r.json(t), "images", 0).(map[string]any)
	want := map[string]any{"id": e.public, "name": "cirros", "status": "ACTIVE", "progress": float64(100), "minRam": float64(512),
		"minDisk": float64(1), "OS-EXT-IMG-SIZE:size": float64(1024), "created": "2026-11-01T08:00:00Z",
		"updated": "2026-11-01T08:00:00Z", "OS-DCF:diskConfig": "MANUAL"}
	for k, v := range want {
		if pub[k] != v {
			t.Errorf("detail %s = %v, want %v", k, pub[k], v)
		}
	}
	if md := pub["metadata"].(map[string]any); len(md) != 2 || md["os_distro"] != "cirros" || md["auto_disk_config"] != "False" {
		t.Errorf("metadata %v: the custom properties only", md)
	}
	if _, has := pub["server"]; has {
		t.Errorf("an image of no server shows one: %v", pub)
	}
	snap := get(t, r.json(t), "images", 1).(map[string]any)
	if snap["status"] != "SAVING" || snap["progress"] != float64(50) || snap["OS-EXT-IMG-SIZE:size"] != float64(0) ||
		get(t, snap, "server", "id") != snapServer || !strings.HasSuffix(get(t, snap, "server", "links", 0, "href").(string), "/servers/"+snapServer) {
		t.Fatalf("snapshot %v", snap)
	}

	for q, want := range map[string][]string{
		"name=web":      {e.mine},
		"status=ACTIVE": {e.public, e.mine},
		"type=snapshot": {e.snap},
		"server=" + url.QueryEscape("http://nova/v2.1/servers/"+snapServer):                      {e.snap},
		"changes-since=" + url.QueryEscape(imagesEpoch.Add(90*time.Minute).Format(time.RFC3339)): {e.mine},
		"limit=0":                         {e.public, e.snap, e.mine},
		"marker=" + e.public + "&limit=1": {e.snap},
	} {
		if got := imageIDs(t, e.get(t, memberA, "/images?"+q, "2.1")); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("?%s: %v, want %v", q, got, want)
		}
	}
	r = e.get(t, memberA, "/images/detail?limit=2", "2.1")
	next := get(t, r.json(t), "images_links", 0).(map[string]any)
	if len(imageIDs(t, r)) != 2 || next["rel"] != "next" || !strings.Contains(next["href"].(string), "marker="+e.snap) {
		t.Fatalf("a cut list's next link: %v", next)
	}
	if r := e.get(t, memberA, "/images?limit=x", "2.1"); r.code != http.StatusBadRequest {
		t.Errorf("a bad limit: %s", r)
	}

	// One image; none beyond 2.35, as in Nova.
	r = e.get(t, memberA, "/images/"+e.mine, "2.1")
	if r.code != http.StatusOK || get(t, r.json(t), "image", "name") != "web" {
		t.Fatalf("show: %s", r)
	}
	for _, p := range []string{"/images/" + e.theirs, "/images/7b5f2a1e-1000-4000-8000-999999999999"} {
		r := e.get(t, memberA, p, "2.1")
		if _, msg := errorMessage(t, r); r.code != http.StatusNotFound || msg != "Image not found." {
			t.Errorf("GET %s: %s", p, r)
		}
	}
	for _, p := range []string{"/images", "/images/detail", "/images/" + e.mine} {
		if r := e.get(t, memberA, p, "2.36"); r.code != http.StatusNotFound {
			t.Errorf("GET %s at 2.36: %s, want 404", p, r)
		}
	}
	// A token Glance refuses: Glance's 401 is the caller's 403.
	e.ks.issue("glance-does-not-know-me", "cid", "demo-c", "member", "reader")
	r = e.get(t, "glance-does-not-know-me", "/images", "2.1")
	if _, msg := errorMessage(t, r); r.code != http.StatusForbidden || !strings.Contains(msg, "401 Unauthorized") {
		t.Errorf("a token Glance refuses: %s, want 403 with Glance's answer", r)
	}
	// A caller with a static token reads as corral's Glance user.
	if got := imageIDs(t, e.get(t, adminToken, "/images", "2.1")); len(got) != 4 {
		t.Errorf("the static admin lists %v", got)
	}
}

// DELETE /images/{id}: the caller's own; another project's is Glance's
// 403, Nova's "You are not allowed to delete the image."
func TestImagesProxyDelete(t *testing.T) {
	e := newImagesEnv(t)
	del := func(token, id string) response {
		return do(t, e.ts, http.MethodDelete, computeBase+"/images/"+id, token, "", mv("2.1"))
	}
	if r := del(memberA, e.public); r.code != http.StatusForbidden {
		t.Fatalf("delete another project's public image: %s", r)
	} else if _, msg := errorMessage(t, r); msg != "You are not allowed to delete the image." {
		t.Fatalf("message %q", msg)
	}
	if r := del(memberA, e.theirs); r.code != http.StatusNotFound {
		t.Fatalf("delete an image it cannot see: %s", r)
	}
	if r := del(adminToken, e.mine); r.code != http.StatusForbidden {
		t.Fatalf("a static token changes Glance as corral: %s", r)
	}
	if r := del(memberA, e.mine); r.code != http.StatusNoContent || e.g.image(e.mine) != nil {
		t.Fatalf("delete: %s", r)
	}
	if r := do(t, e.ts, http.MethodDelete, computeBase+"/images/"+e.snap, memberA, "", mv("2.36")); r.code != http.StatusNotFound || e.g.image(e.snap) == nil {
		t.Fatalf("delete at 2.36: %s", r)
	}
}

// /images/{id}/metadata (up to 2.38): an image's custom properties, set
// through Glance's JSON patches; the metadata_items quota bounds them.
func TestImagesProxyMetadata(t *testing.T) {
	e := newImagesEnv(t)
	base := computeBase + "/images/" + e.mine + "/metadata"
	call := func(method, path, body string) response {
		return do(t, e.ts, method, base+path, memberA, body, mv("2.38"))
	}
	props := func() map[string]any {
		out := map[string]any{}
		for k, v := range e.g.image(e.mine) {
			if !strings.Contains(" "+strings.Join(glanceOwn, " ")+" ", " "+k+" ") {
				out[k] = v
			}
		}
		return out
	}
	if r := call(http.MethodPost, "", `{"metadata": {"os_version": "value1", "os_distro": "value2"}}`); r.code != http.StatusOK ||
		len(get(t, r.json(t), "metadata").(map[string]any)) != 2 {
		t.Fatalf("create: %s", r)
	}
	if r := call(http.MethodPut, "", `{"metadata": {"os_version": "value2", "architecture": "value3"}}`); r.code != http.StatusOK {
		t.Fatalf("update all: %s", r)
	}
	if p := props(); len(p) != 2 || p["os_version"] != "value2" || p["architecture"] != "value3" {
		t.Fatalf("after PUT, Glance holds %v", p)
	}
	if r := call(http.MethodPost, "", `{"metadata": {"os_version": "alt1", "os_distro": "d"}}`); r.code != http.StatusOK ||
		len(get(t, r.json(t), "metadata").(map[string]any)) != 3 {
		t.Fatalf("merge: %s", r)
	}
	r := call(http.MethodGet, "", "")
	if md := get(t, r.json(t), "metadata").(map[string]any); r.code != http.StatusOK || len(md) != 3 || md["os_version"] != "alt1" {
		t.Fatalf("list: %s", r)
	}
	if r := call(http.MethodGet, "/os_distro", ""); r.code != http.StatusOK || get(t, r.json(t), "meta", "os_distro") != "d" {
		t.Fatalf("show item: %s", r)
	}
	if r := call(http.MethodPut, "/os_version", `{"meta": {"os_version": "alt"}}`); r.code != http.StatusOK || props()["os_version"] != "alt" {
		t.Fatalf("set item: %s", r)
	}
	if r := call(http.MethodDelete, "/os_version", ""); r.code != http.StatusNoContent || props()["os_version"] != nil {
		t.Fatalf("delete item: %s", r)
	}
	for _, tc := range []struct {
		method, path, body string
		code               int
		msg                string
	}{
		{http.MethodGet, "/os_version", "", http.StatusNotFound, "The resource could not be found."},
		{http.MethodDelete, "/os_version", "", http.StatusNotFound, "Invalid metadata key"},
		{http.MethodPut, "/os_version", `{"meta": {"other": "x"}}`, http.StatusBadRequest, "Request body and URI mismatch"},
		{http.MethodPost, "", `{"metadata": {"bad/key": "x"}}`, http.StatusBadRequest, ""},
		{http.MethodPost, "", `{"metadata": {"k": 1}}`, http.StatusBadRequest, ""},
		{http.MethodPost, "", `{"meta": {}}`, http.StatusBadRequest, ""},
	} {
		r := call(tc.method, tc.path, tc.body)
		if _, msg := errorMessage(t, r); r.code != tc.code || tc.msg != "" && msg != tc.msg {
			t.Errorf("%s %s %s: %s, want %d %q", tc.method, tc.path, tc.body, r, tc.code, tc.msg)
		}
	}
	many := make([]string, 0, 129)
	for i := range 129 {
		many = append(many, `"k`+strings.Repeat("x", i)+`": "v"`)
	}
	before := props()
	r = call(http.MethodPost, "", `{"metadata": {`+strings.Join(many, ",")+`}}`)
	if _, msg := errorMessage(t, r); r.code != http.StatusForbidden || msg != "Image metadata limit exceeded" || len(props()) != len(before) {
		t.Fatalf("over the metadata_items quota: %s", r)
	}
	for _, p := range []string{"/images/7b5f2a1e-1000-4000-8000-999999999999/metadata", "/images/" + e.theirs + "/metadata"} {
		r := do(t, e.ts, http.MethodGet, computeBase+p, memberA, "", mv("2.38"))
		if _, msg := errorMessage(t, r); r.code != http.StatusNotFound || msg != "Image not found." {
			t.Errorf("GET %s: %s", p, r)
		}
	}
	r = do(t, e.ts, http.MethodPost, computeBase+"/images/"+e.public+"/metadata", memberA, `{"metadata": {"a": "b"}}`, mv("2.38"))
	if _, msg := errorMessage(t, r); r.code != http.StatusForbidden || msg != "Not authorized for image "+e.public+"." {
		t.Errorf("another project's image: %s", r)
	}
	if r := do(t, e.ts, http.MethodGet, base, memberA, "", mv("2.39")); r.code != http.StatusNotFound {
		t.Errorf("metadata at 2.39: %s, want 404", r)
	}
}
