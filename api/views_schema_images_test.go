package api_test

import (
	"net/http"
	"time"
)

// images walks Nova's image proxy on ie (as its member of demo-a): held
// to Tempest's schemas up to 2.35 (the metadata up to 2.38), 404 after.
func (w *viewWalk) images(ie *imagesEnv) {
	t := w.t
	call := func(method, path, body, schema string, lastMinor int) map[string]any {
		t.Helper()
		r := do(t, ie.ts, method, computeBase+path, memberA, body, mv(w.mv.String()))
		if !w.at(lastMinor + 1) {
			w.schemas.check(t, schema, w.mv, r)
		} else if r.code != http.StatusNotFound {
			t.Errorf("%s %s at %s: %s, want 404 after 2.%d", method, path, w.mv, r, lastMinor)
		}
		if len(r.body) == 0 || r.code != http.StatusOK {
			return nil
		}
		return r.json(t)
	}
	if b := call(http.MethodGet, "/images", "", "images/list_images", 35); b != nil {
		w.each("image", "brief", b["images"])
	}
	if b := call(http.MethodGet, "/images/detail", "", "images/list_images_details", 35); b != nil {
		w.each("image", "show", b["images"])
	}
	for _, id := range []string{ie.public, ie.snap} {
		if b := call(http.MethodGet, "/images/"+id, "", "images/get_image", 35); b != nil {
			w.fields("image", "show", b["image"])
		}
	}
	gone := ie.g.add("demo-a", "walked", "active", "private", time.Now(), nil)
	call(http.MethodDelete, "/images/"+gone, "", "images/delete", 35)

	md := "/images/" + ie.mine + "/metadata"
	call(http.MethodPost, md, `{"metadata": {"os_distro": "debian", "os_version": "13"}}`, "images/image_metadata", 38)
	call(http.MethodPut, md, `{"metadata": {"os_distro": "debian"}}`, "images/image_metadata", 38)
	call(http.MethodGet, md, "", "images/image_metadata", 38)
	call(http.MethodPut, md+"/os_version", `{"meta": {"os_version": "13"}}`, "images/image_meta_item", 38)
	call(http.MethodGet, md+"/os_version", "", "images/image_meta_item", 38)
	call(http.MethodDelete, md+"/os_version", "", "images/delete", 38)
}
