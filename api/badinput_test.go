package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// flavorBody builds a POST /flavors body from a valid flavor, with fields
// overridden (a nil value drops the field).
func flavorBody(fields map[string]any) string {
	f := map[string]any{"name": "new", "ram": 512, "vcpus": 1, "disk": 1}
	for k, v := range fields {
		if v == nil {
			delete(f, k)
		} else {
			f[k] = v
		}
	}
	var parts []string
	for _, k := range []string{"id", "name", "ram", "vcpus", "disk", "swap", "OS-FLV-EXT-DATA:ephemeral", "rxtx_factor",
		"os-flavor-access:is_public", "description", "colour"} {
		if v, ok := f[k]; ok {
			parts = append(parts, fmt.Sprintf("%q: %s", k, jsonValue(v)))
		}
	}
	return `{"flavor": {` + strings.Join(parts, ", ") + `}}`
}

func jsonValue(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case raw:
		return string(x)
	}
	return fmt.Sprint(v)
}

// raw is JSON inserted verbatim.
type raw string

func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	setup := []struct{ method, path, body string }{
		{"POST", "/flavors", `{"flavor": {"id": "exists", "name": "taken", "ram": 1024, "vcpus": 2, "disk": 10}}`},
		{"POST", "/flavors/exists/os-extra_specs", `{"extra_specs": {"k1": "v1"}}`},
	}
	for _, s := range setup {
		if r := do(t, e.ts, s.method, computeBase+s.path, adminToken, s.body, nil); r.code != http.StatusOK {
			t.Fatalf("setup %s %s: %s", s.method, s.path, r)
		}
	}
	long := strings.Repeat("x", 256)
	valid := flavorBody(nil)

	cases := []struct {
		name         string
		method, path string
		body         string
		code         int
		msg          []string // substrings of the error message
	}{
		{"malformed JSON", "POST", "/flavors", `{"flavor": {"name": "a",`, 400, []string{"malformed JSON"}},
		{"not an object", "POST", "/flavors", `[1, 2]`, 400, []string{"malformed JSON"}},
		{"empty body", "POST", "/flavors", ``, 400, []string{"empty"}},
		{"blank body", "POST", "/flavors", "  \n\t", 400, []string{"empty"}},
		{"trailing garbage", "POST", "/flavors", valid + ` x`, 400, []string{"after the JSON object"}},
		{"second object", "POST", "/flavors", valid + valid, 400, []string{"after the JSON object"}},
		{"trailing brace", "POST", "/flavors", valid + `}`, 400, []string{"after the JSON object"}},
		{"trailing bracket", "POST", "/flavors", valid + ` ]`, 400, []string{"after the JSON object"}},
		{"unknown field", "POST", "/flavors", flavorBody(map[string]any{"colour": "red"}), 400, []string{`unknown field "colour"`}},
		{"unknown top-level field", "POST", "/flavors", `{"flavour": {"name": "a", "ram": 1, "vcpus": 1, "disk": 1}}`, 400, []string{`unknown field "flavour"`}},
		{"missing flavor", "POST", "/flavors", `{}`, 400, []string{`{"flavor": {...}}`}},
		{"null flavor", "POST", "/flavors", `{"flavor": null}`, 400, []string{`{"flavor": {...}}`}},
		{"missing name", "POST", "/flavors", flavorBody(map[string]any{"name": nil}), 400, []string{"missing", "name"}},
		{"missing ram", "POST", "/flavors", flavorBody(map[string]any{"ram": nil}), 400, []string{"missing", "ram"}},
		{"missing vcpus", "POST", "/flavors", flavorBody(map[string]any{"vcpus": nil}), 400, []string{"missing", "vcpus"}},
		{"missing disk", "POST", "/flavors", flavorBody(map[string]any{"disk": nil}), 400, []string{"missing", "disk"}},
		{"missing everything", "POST", "/flavors", `{"flavor": {}}`, 400, []string{"name, ram, vcpus, disk"}},
		{"ram is a word", "POST", "/flavors", flavorBody(map[string]any{"ram": "x"}), 400, []string{"ram", "does not match"}},
		{"ram is a signed string", "POST", "/flavors", flavorBody(map[string]any{"ram": "-1"}), 400, []string{"ram", "does not match"}},
		{"ram is a boolean", "POST", "/flavors", flavorBody(map[string]any{"ram": true}), 400, []string{"ram", "is not of type"}},
		{"vcpus is a fraction", "POST", "/flavors", flavorBody(map[string]any{"vcpus": 1.5}), 400, []string{"vcpus"}},
		{"name is a number", "POST", "/flavors", flavorBody(map[string]any{"name": 7}), 400, []string{"name"}},
		{"is_public is no boolean word", "POST", "/flavors", flavorBody(map[string]any{"os-flavor-access:is_public": "maybe"}), 400, []string{"is_public"}},
		{"is_public is a number", "POST", "/flavors", flavorBody(map[string]any{"os-flavor-access:is_public": 2}), 400, []string{"is_public"}},
		{"negative ram", "POST", "/flavors", flavorBody(map[string]any{"ram": -1}), 400, []string{"ram", "less than the minimum of 1"}},
		{"zero ram", "POST", "/flavors", flavorBody(map[string]any{"ram": 0}), 400, []string{"ram", "less than the minimum of 1"}},
		{"negative vcpus", "POST", "/flavors", flavorBody(map[string]any{"vcpus": -2}), 400, []string{"vcpus", "-2 is less than the minimum of 1"}},
		{"zero vcpus", "POST", "/flavors", flavorBody(map[string]any{"vcpus": 0}), 400, []string{"vcpus", "0 is less than the minimum of 1"}},
		{"negative disk", "POST", "/flavors", flavorBody(map[string]any{"disk": -1}), 400, []string{"disk", "less than the minimum of 0"}},
		{"negative swap", "POST", "/flavors", flavorBody(map[string]any{"swap": -1}), 400, []string{"swap", "less than the minimum of 0"}},
		{"negative ephemeral", "POST", "/flavors", flavorBody(map[string]any{"OS-FLV-EXT-DATA:ephemeral": -3}), 400, []string{"ephemeral", "-3 is less than the minimum of 0"}},
		{"ram beyond int32", "POST", "/flavors", flavorBody(map[string]any{"ram": 1 << 31}), 400, []string{"ram", "2147483648 is greater than the maximum of 2147483647"}},
		{"negative rxtx", "POST", "/flavors", flavorBody(map[string]any{"rxtx_factor": -1.5}), 400, []string{"rxtx_factor"}},
		{"name with leading space", "POST", "/flavors", flavorBody(map[string]any{"name": " lead"}), 400, []string{"whitespace"}},
		{"name with trailing space", "POST", "/flavors", flavorBody(map[string]any{"name": "trail\t"}), 400, []string{"whitespace"}},
		{"empty name", "POST", "/flavors", flavorBody(map[string]any{"name": ""}), 400, []string{"name", "too short"}},
		{"too long name", "POST", "/flavors", flavorBody(map[string]any{"name": long}), 400, []string{"name", "too long"}},
		{"too long id", "POST", "/flavors", flavorBody(map[string]any{"id": long}), 400, []string{"id", "too long"}},
		{"id with slash", "POST", "/flavors", flavorBody(map[string]any{"id": "a/b"}), 400, []string{"a/b", "does not match"}},
		{"too long description", "POST", "/flavors", flavorBody(map[string]any{"description": strings.Repeat("d", 65536)}), 400, []string{"description"}},
		{"duplicate id", "POST", "/flavors", flavorBody(map[string]any{"id": "exists"}), 409, []string{"ID exists already exists"}},
		{"duplicate name", "POST", "/flavors", flavorBody(map[string]any{"name": "taken"}), 409, []string{"name taken already exists"}},
		{"extra spec with bad key", "POST", "/flavors/exists/os-extra_specs", `{"extra_specs": {"ok": "1", "bad/key": "v"}}`, 400, []string{"bad/key", "letters, digits"}},
		{"extra spec with empty key", "POST", "/flavors/exists/os-extra_specs", `{"extra_specs": {"": "v"}}`, 400, []string{"key is empty"}},
		{"extra spec with long value", "POST", "/flavors/exists/os-extra_specs", `{"extra_specs": {"k": "` + long + `"}}`, 400, []string{"too long"}},
		{"no extra specs", "POST", "/flavors/exists/os-extra_specs", `{"extra_specs": {}}`, 400, []string{"at least one key"}},
		{"extra spec a boolean", "POST", "/flavors/exists/os-extra_specs", `{"extra_specs": {"k": true}}`, 400, []string{"is not of type"}},
		{"extra spec an object", "POST", "/flavors/exists/os-extra_specs", `{"extra_specs": {"k": {}}}`, 400, []string{"is not of type"}},
		{"extra specs of unknown flavor", "GET", "/flavors/nope/os-extra_specs", ``, 404, []string{"nope"}},
		{"set extra specs of unknown flavor", "POST", "/flavors/nope/os-extra_specs", `{"extra_specs": {"k": "v"}}`, 404, []string{"nope"}},
		{"put extra spec of unknown flavor", "PUT", "/flavors/nope/os-extra_specs/k", `{"k": "v"}`, 404, []string{"nope"}},
		{"put extra spec key mismatch", "PUT", "/flavors/exists/os-extra_specs/k1", `{"k2": "v"}`, 400, []string{"mismatch", "k1"}},
		{"put extra spec two keys", "PUT", "/flavors/exists/os-extra_specs/k1", `{"k1": "v", "k2": "v"}`, 400, []string{"mismatch"}},
		{"put extra spec bad key", "PUT", "/flavors/exists/os-extra_specs/a%25b", `{"a%b": "v"}`, 400, []string{"a%b"}},
		{"delete unknown flavor", "DELETE", "/flavors/nope", ``, 404, []string{"nope"}},
		{"get unknown flavor", "GET", "/flavors/nope", ``, 404, []string{"nope"}},
		{"get unknown extra spec", "GET", "/flavors/exists/os-extra_specs/nokey", ``, 404, []string{"nokey"}},
		{"delete unknown extra spec", "DELETE", "/flavors/exists/os-extra_specs/nokey", ``, 404, []string{"nokey"}},
		{"delete extra spec of unknown flavor", "DELETE", "/flavors/nope/os-extra_specs/k1", ``, 404, []string{"nope"}},
		{"negative limit", "GET", "/flavors?limit=-1", ``, 400, []string{"limit"}},
		{"bad minRam", "GET", "/flavors/detail?minRam=lots", ``, 400, []string{"minRam"}},
		{"bad minDisk", "GET", "/flavors/detail?minDisk=1.5", ``, 400, []string{"minDisk"}},
		{"bad is_public", "GET", "/flavors?is_public=maybe", ``, 400, []string{"Invalid is_public filter [maybe]"}},
		{"unknown marker", "GET", "/flavors?marker=nope", ``, 400, []string{"marker", "nope"}},
	}
	novaKey := map[int]string{400: "badRequest", 404: "itemNotFound", 409: "conflictingRequest"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.digest()
			r := do(t, e.ts, c.method, computeBase+c.path, adminToken, c.body, nil)
			if r.code != c.code {
				t.Fatalf("%s %s: got %s, want %d", c.method, c.path, r, c.code)
			}
			key, msg := errorMessage(t, r)
			if key != novaKey[c.code] {
				t.Errorf("error key %q, want %q: %s", key, novaKey[c.code], r.body)
			}
			for _, want := range c.msg {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
			if after := e.digest(); after != before {
				t.Errorf("rejected request changed the state (digest %s → %s)", before[:12], after[:12])
			}
		})
	}

	// The pre-existing flavor is intact.
	r := do(t, e.ts, "GET", computeBase+"/flavors/exists", readerToken, "", mv("2.61"))
	f := get(t, r.json(t), "flavor")
	if get(t, f, "name") != "taken" || get(t, f, "ram") != 1024.0 || get(t, f, "extra_specs", "k1") != "v1" {
		t.Errorf("flavor after bad input: %s", r.body)
	}
	if n := len(e.peer.Node.Store().Flavors()); n != 1 {
		t.Errorf("%d flavors after bad input, want 1", n)
	}
}
