package api_test

import (
	"net/http"
	"testing"
)

// Tempest's ServerPasswordTestJSON: os-server-password of a project's
// server answers the password a guest posted to the metadata service,
// which corral has none of: Nova's empty password; DELETE clears it (204).
// Another project's server is a 404.
func TestServerPassword(t *testing.T) {
	e := bareMetalEnv(t, 1)
	id, _ := bootActions(t, e, memberA)
	activate(t, e, id)
	path := computeBase + "/servers/" + id + "/os-server-password"
	r := do(t, e.ts, http.MethodGet, path, memberA, "", nil)
	if r.code != http.StatusOK || get(t, r.json(t), "password") != "" {
		t.Fatalf("show password: %s", r)
	}
	if r := do(t, e.ts, http.MethodDelete, path, memberA, "", nil); r.code != http.StatusNoContent || len(r.body) != 0 {
		t.Fatalf("clear password: %s", r)
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		r := do(t, e.ts, m, path, memberB, "", nil)
		if _, msg := errorMessage(t, r); r.code != http.StatusNotFound || msg != "Instance "+id+" could not be found." {
			t.Errorf("%s of another project's server's password: %s", m, r)
		}
	}
}

// Tempest's ServerDiagnosticsNegativeTest: diagnostics are an admin's
// (403 to a project member, with Nova's policy message); Nova's Ironic
// driver has none, and Nova answers an admin 501.
func TestServerDiagnostics(t *testing.T) {
	e := bareMetalEnv(t, 1)
	id, _ := bootActions(t, e, memberA)
	activate(t, e, id)
	path := computeBase + "/servers/" + id + "/diagnostics"
	r := do(t, e.ts, http.MethodGet, path, memberA, "", nil)
	if _, msg := errorMessage(t, r); r.code != http.StatusForbidden || msg != "Policy doesn't allow os_compute_api:os-server-diagnostics to be performed." {
		t.Fatalf("a member's diagnostics: %s", r)
	}
	for _, v := range []string{"2.1", "2.48"} {
		r = do(t, e.ts, http.MethodGet, path, adminToken, "", mv(v))
		if key, msg := errorMessage(t, r); r.code != http.StatusNotImplemented || key != "notImplemented" ||
			msg != "The requested functionality is not supported." {
			t.Fatalf("an admin's diagnostics at %s: %s", v, r)
		}
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/servers/nope/diagnostics", adminToken, "", nil); r.code != http.StatusNotFound {
		t.Fatalf("diagnostics of no server: %s", r)
	}
}
