package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// Nova's schemas take a flavor's sizes as strings of digits, its id as a
// number, booleans as words, rxtx_factor as a string, extra specs'
// values as numbers: so does corral.
func TestNovaLenientInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		body  string
		check map[string]any
	}{
		{`{"flavor": {"id": 10, "name": "ten", "ram": "1024", "vcpus": "2", "disk": "0", "os-flavor-access:is_public": "True"}}`,
			map[string]any{"id": "10", "ram": 1024.0, "vcpus": 2.0, "disk": 0.0, "os-flavor-access:is_public": true}},
		{`{"flavor": {"id": null, "name": "auto", "ram": 512.0, "vcpus": 1, "disk": 1, "swap": "0512", "rxtx_factor": "1.5", "os-flavor-access:is_public": "no"}}`,
			map[string]any{"ram": 512.0, "swap": 512.0, "rxtx_factor": 1.5, "os-flavor-access:is_public": false}},
		{`{"flavor": {"id": "with space.and-dots_", "name": "n a m e", "ram": 1, "vcpus": 1, "disk": 1, "OS-FLV-EXT-DATA:ephemeral": "3", "os-flavor-access:is_public": "YES"}}`,
			map[string]any{"id": "with space.and-dots_", "OS-FLV-EXT-DATA:ephemeral": 3.0}},
		{`{"flavor": {"name": "caf\u00e9 \ud83d\ude80", "ram": 1, "vcpus": 1, "disk": 1, "description": null}}`,
			map[string]any{"name": "café 🚀"}},
	} {
		r := do(t, e.ts, http.MethodPost, computeBase+"/flavors", adminToken, c.body, nil)
		if r.code != http.StatusOK {
			t.Errorf("POST %s: %s", c.body, r)
			continue
		}
		for k, want := range c.check {
			if got := get(t, r.json(t), "flavor", k); got != want {
				t.Errorf("POST %s: %s = %v, want %v", c.body, k, got, want)
			}
		}
	}
	r := do(t, e.ts, http.MethodPost, computeBase+"/flavors/10/os-extra_specs", adminToken, `{"extra_specs": {"hw:numa_nodes": 2, "ratio": 1.5, "s": "x"}}`, nil)
	if r.code != http.StatusOK || get(t, r.json(t), "extra_specs", "hw:numa_nodes") != "2" || get(t, r.json(t), "extra_specs", "ratio") != "1.5" {
		t.Fatalf("numbers as extra specs: %s", r)
	}
	if r := do(t, e.ts, http.MethodPut, computeBase+"/flavors/10/os-extra_specs/hw:numa_nodes", adminToken, `{"hw:numa_nodes": 4}`, nil); r.code != http.StatusOK {
		t.Fatalf("a number as an extra spec: %s", r)
	}
	if f, _ := e.peer.Node.Store().Flavor("10"); f.ExtraSpecs["hw:numa_nodes"] != "4" {
		t.Fatalf("stored specs %v", f.ExtraSpecs)
	}
	boot := `{"server": {"name": "a", "imageRef": "http://img/a", "flavorRef": 10, "networks": "none", "OS-DCF:diskConfig": "AUTO",
		"min_count": "1", "max_count": 1, "config_drive": "true", "accessIPv4": "192.0.2.1", "accessIPv6": "2001:db8::1",
		"metadata": {"k": "v", "a b:c.d-e_f": ""}, "security_groups": [{"name": "default"}], "availability_zone": "nova",
		"adminPass": "anything \u0000 goes"}, "OS-SCH-HNT:scheduler_hints": {"group": "x"}}`
	r = do(t, e.ts, http.MethodPost, computeBase+"/servers", adminToken, boot, nil)
	if r.code != http.StatusAccepted || get(t, r.json(t), "server", "OS-DCF:diskConfig") != "AUTO" {
		t.Fatalf("boot as the openstack CLI may: %s", r)
	}
	id := get(t, r.json(t), "server", "id").(string)
	if s, err := e.peer.Node.Store().Server(id); err != nil || s.Flavor.ID != "10" || len(s.Metadata) != 2 {
		t.Fatalf("stored server %+v: %v", s, err)
	}
	// The default security group, named twice or beside an entry without a
	// name (which Nova skips), is the one a server has.
	sgs := `{"server": {"name": "sg", "imageRef": "http://img/a", "flavorRef": "10", "networks": "none", "security_groups": [{"name": "default"}, {}, {"name": "default"}]}}`
	if r := do(t, e.ts, http.MethodPost, computeBase+"/servers", adminToken, sgs, nil); r.code != http.StatusAccepted ||
		get(t, r.json(t), "server", "security_groups", 0, "name") != "default" {
		t.Fatalf("boot into the default security group: %s", r)
	}
	// 2.19 takes a description, 2.52 tags (corral keeps neither yet).
	desc := `{"server": {"name": "b", "imageRef": "http://img/a", "flavorRef": "10", "networks": "none", "description": "web", "tags": ["a", "b"]}}`
	if r := do(t, e.ts, http.MethodPost, computeBase+"/servers", adminToken, desc, mv("2.52")); r.code != http.StatusAccepted {
		t.Fatalf("boot with a description and tags at 2.52: %s", r)
	}
}

// What Nova's schemas refuse, corral refuses with Nova's status, and a
// refused request changes nothing.
func TestNovaStrictInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	createFlavor(t, e, `{"flavor": {"name": "f", "id": "f", "ram": 1, "vcpus": 1, "disk": 1}}`)
	serverBody := func(extra string) string {
		return `{"server": {"name": "a", "imageRef": "http://img/a", "flavorRef": "f", "networks": "none"` + extra + `}}`
	}
	r := do(t, e.ts, http.MethodPost, computeBase+"/servers", adminToken, serverBody(""), nil)
	if r.code != http.StatusAccepted {
		t.Fatalf("boot: %s", r)
	}
	server := get(t, r.json(t), "server", "id").(string)
	meta := func(n int) string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("k%d", i)] = "v"
		}
		b, _ := json.Marshal(m)
		return `, "metadata": ` + string(b)
	}
	long := strings.Repeat("x", 256)
	cases := []struct {
		name, method, path, body string
		hdr                      map[string]string
		code                     int
		msg                      string
	}{
		{"name with NUL", "POST", "/servers", serverBody(`, "name": "a\u0000b"`), nil, 400, "printable"},
		{"name with CR LF", "POST", "/servers", serverBody(`, "name": "a\r\nb"`), nil, 400, "printable"},
		{"name with a bidi override", "POST", "/servers", serverBody(`, "name": "a\u202eb"`), nil, 400, "printable"},
		{"name with a lone surrogate", "POST", "/servers", serverBody(`, "name": "a\udc00"`), nil, 400, "surrogate"},
		{"name with a trailing space", "POST", "/servers", serverBody(`, "name": "a "`), nil, 400, "whitespace"},
		{"name too long", "POST", "/servers", serverBody(`, "name": "` + long + `"`), nil, 400, "too long"},
		{"name a number", "POST", "/servers", serverBody(`, "name": 7`), nil, 400, "name"},
		{"bad accessIPv4", "POST", "/servers", serverBody(`, "accessIPv4": "1.2.3"`), nil, 400, "ipv4"},
		{"accessIPv4 an IPv6", "POST", "/servers", serverBody(`, "accessIPv4": "::1"`), nil, 400, "ipv4"},
		{"bad accessIPv6", "POST", "/servers", serverBody(`, "accessIPv6": "2001:db8::g"`), nil, 400, "ipv6"},
		{"malformed network uuid", "POST", "/servers", serverBody(`, "networks": [{"uuid": "not-a-uuid"}]`), nil, 400, "network uuid is not in proper format"},
		{"malformed port", "POST", "/servers", serverBody(`, "networks": [{"port": "p1"}]`), nil, 400, "uuid"},
		{"bad fixed_ip", "POST", "/servers", serverBody(`, "networks": [{"uuid": "6f1c2a70-0000-4000-8000-0000000000aa", "fixed_ip": "x"}]`), nil, 400, "fixed_ip"},
		{"port twice", "POST", "/servers", serverBody(`, "networks": [{"port": "6f1c2a70-0000-4000-8000-0000000000aa"}, {"port": "6f1c2a70-0000-4000-8000-0000000000aa"}]`), nil, 400, "specified twice"},
		{"too many networks", "POST", "/servers", serverBody(`, "networks": [` + strings.TrimSuffix(strings.Repeat(`{"uuid": "6f1c2a70-0000-4000-8000-0000000000aa"},`, 65), ",") + `]`), nil, 400, "at most 64 networks"},
		{"network tag below 2.42", "POST", "/servers", serverBody(`, "networks": [{"uuid": "6f1c2a70-0000-4000-8000-0000000000aa", "tag": "t"}]`), nil, 400, "tag"},
		{"metadata value over 255", "POST", "/servers", serverBody(`, "metadata": {"k": "` + long + `"}`), nil, 400, "too long"},
		{"metadata key over 255", "POST", "/servers", serverBody(`, "metadata": {"` + long + `": "v"}`), nil, 400, "Additional properties"},
		{"metadata key with a slash", "POST", "/servers", serverBody(`, "metadata": {"a/b": "v"}`), nil, 400, "Additional properties"},
		{"metadata value with NUL", "POST", "/servers", serverBody(`, "metadata": {"k": "a\u0000"}`), nil, 400, "control character"},
		{"metadata value with a bidi override", "POST", "/servers", serverBody(`, "metadata": {"k": "a\u2066"}`), nil, 400, "control character"},
		{"metadata over the quota", "POST", "/servers", serverBody(meta(129)), nil, 403, "Maximum number of metadata items exceeds 128"},
		{"min_count 0", "POST", "/servers", serverBody(`, "min_count": 0`), nil, 400, "less than the minimum of 1"},
		{"max_count 0", "POST", "/servers", serverBody(`, "max_count": "0"`), nil, 400, "less than the minimum of 1"},
		{"min_count above max_count", "POST", "/servers", serverBody(`, "min_count": 2, "max_count": 1`), nil, 400, "min_count must be <= max_count"},
		{"min_count a word", "POST", "/servers", serverBody(`, "min_count": "one"`), nil, 400, "does not match"},
		{"unknown key pair", "POST", "/servers", serverBody(`, "key_name": "nokey"`), nil, 400, "Invalid key_name provided"},
		{"key_name with NUL", "POST", "/servers", serverBody(`, "key_name": "k\u0000"`), nil, 400, "printable"},
		{"imageRef too long", "POST", "/servers", serverBody(`, "imageRef": "http://img/` + strings.Repeat("i", 2048) + `"`), nil, 400, "Invalid imageRef"},
		{"imageRef with a newline", "POST", "/servers", serverBody(`, "imageRef": "http://img/a\nb"`), nil, 400, "Invalid imageRef"},
		{"flavorRef a boolean", "POST", "/servers", serverBody(`, "flavorRef": true`), nil, 400, "flavorRef"},
		{"diskConfig unknown", "POST", "/servers", serverBody(`, "OS-DCF:diskConfig": "auto"`), nil, 400, "AUTO"},
		{"config_drive a word", "POST", "/servers", serverBody(`, "config_drive": "maybe"`), nil, 400, "config_drive"},
		{"description below 2.19", "POST", "/servers", serverBody(`, "description": "d"`), nil, 400, "2.19"},
		{"description with a newline", "POST", "/servers", serverBody(`, "description": "a\nb"`), mv("2.19"), 400, "printable"},
		{"description too long", "POST", "/servers", serverBody(`, "description": "` + long + `"`), mv("2.19"), 400, "too long"},
		{"tags below 2.52", "POST", "/servers", serverBody(`, "tags": ["a"]`), nil, 400, "2.52"},
		{"tag with a comma", "POST", "/servers", serverBody(`, "tags": ["a,b"]`), mv("2.52"), 400, "does not match"},
		{"security group name empty", "POST", "/servers", serverBody(`, "security_groups": [{"name": ""}]`), nil, 400, "too short"},
		{"security group that does not exist", "POST", "/servers", serverBody(`, "security_groups": [{"name": "does_not_exist"}]`), nil, 400, "Unable to find security_group with name or id 'does_not_exist'"},
		{"default and a security group that does not exist", "POST", "/servers", serverBody(`, "security_groups": [{"name": "default"}, {"name": "web"}]`), nil, 400, "Unable to find security_group with name or id 'web'"},
		{"security group of another case", "POST", "/servers", serverBody(`, "security_groups": [{"name": "Default"}]`), nil, 400, "'Default'"},
		{"security group entry with another key", "POST", "/servers", serverBody(`, "security_groups": [{"id": "default"}]`), nil, 400, "id"},
		{"restore a live server", "POST", "/servers/" + server + "/action", `{"restore": null}`, nil, 409, "Cannot 'restore' instance"},
		{"restore an unknown server", "POST", "/servers/6f1c2a70-0000-4000-8000-0000000000ff/action", `{"restore": null}`, nil, 404, "could not be found"},
		{"flavor name with NUL", "POST", "/flavors", `{"flavor": {"name": "a\u0000", "ram": 1, "vcpus": 1, "disk": 1}}`, nil, 400, "printable"},
		{"flavor id with NUL", "POST", "/flavors", `{"flavor": {"id": "a\u0000", "name": "a", "ram": 1, "vcpus": 1, "disk": 1}}`, nil, 400, "does not match"},
		{"flavor id with a bidi override", "POST", "/flavors", `{"flavor": {"id": "a\u202e", "name": "a", "ram": 1, "vcpus": 1, "disk": 1}}`, nil, 400, "does not match"},
		{"flavor id empty", "POST", "/flavors", `{"flavor": {"id": "", "name": "a", "ram": 1, "vcpus": 1, "disk": 1}}`, nil, 400, "too short"},
		{"flavor description with a CR", "POST", "/flavors", `{"flavor": {"name": "a", "ram": 1, "vcpus": 1, "disk": 1, "description": "a\rb"}}`, nil, 400, "printable"},
		{"rxtx_factor 1e308", "POST", "/flavors", `{"flavor": {"name": "a", "ram": 1, "vcpus": 1, "disk": 1, "rxtx_factor": 1e308}}`, nil, 400, "maximum"},
		{"rxtx_factor 0", "POST", "/flavors", `{"flavor": {"name": "a", "ram": 1, "vcpus": 1, "disk": 1, "rxtx_factor": "0"}}`, nil, 400, "minimum"},
		{"extra spec value with NUL", "POST", "/flavors/f/os-extra_specs", `{"extra_specs": {"k": "\u0000"}}`, nil, 400, "control character"},
		{"too many extra specs", "POST", "/flavors/f/os-extra_specs", `{"extra_specs": ` + strings.Replace(meta(257), `, "metadata": `, "", 1) + `}`, nil, 400, "at most 256 extra specs"},
		{"tenant with NUL", "POST", "/flavors/f/action", `{"addTenantAccess": {"tenant": "p\u0000"}}`, nil, 400, "tenant"},
		{"key pair name with a trailing space", "POST", "/os-keypairs", `{"keypair": {"name": "k "}}`, nil, 400, "whitespace"},
		{"key pair name with NUL", "POST", "/os-keypairs", `{"keypair": {"name": "k\u0000"}}`, nil, 400, "unsafe characters"},
		{"lock reason with NUL", "POST", "/servers/" + server + "/action", `{"lock": {"locked_reason": "a\u0000"}}`, mv("2.73"), 400, "locked_reason"},
		{"rebuild with a bad access address", "POST", "/servers/" + server + "/action", `{"rebuild": {"imageRef": "http://img/b", "accessIPv4": "x"}}`, nil, 400, "ipv4"},
		{"changes-since not a date", "GET", "/servers?changes-since=yesterday", "", nil, 400, "Invalid input for query parameters changes-since. Value: yesterday. 'yesterday' is not a 'date-time'"},
		{"changes-since a 13th month", "GET", "/servers/detail?changes-since=2020-13-01T00:00:00Z", "", nil, 400, "is not a 'date-time'"},
		{"rebuild with preserve_ephemeral a word", "POST", "/servers/" + server + "/action", `{"rebuild": {"imageRef": "http://img/b", "preserve_ephemeral": "sure"}}`, nil, 400, "preserve_ephemeral"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.digest()
			r := do(t, e.ts, c.method, computeBase+c.path, adminToken, c.body, c.hdr)
			if r.code != c.code {
				t.Fatalf("%s %s: %s, want %d", c.method, c.path, r, c.code)
			}
			if _, msg := errorMessage(t, r); !strings.Contains(msg, c.msg) {
				t.Errorf("message %q lacks %q", msg, c.msg)
			}
			if e.digest() != before {
				t.Error("a refused request changed the state")
			}
		})
	}
	// Exactly the bounds pass.
	for _, ok := range []string{serverBody(meta(128)), serverBody(`, "metadata": {"` + long[1:] + `": "` + long[1:] + `"}`),
		serverBody(`, "name": "` + long[1:] + `"`), serverBody(`, "networks": [` + strings.TrimSuffix(strings.Repeat(`{"uuid": "6f1c2a70-0000-4000-8000-0000000000aa"},`, 64), ",") + `]`),
		serverBody(`, "metadata": {"multi": "line\none\ttab"}`)} {
		if r := do(t, e.ts, "POST", computeBase+"/servers", adminToken, ok, nil); r.code != http.StatusAccepted {
			t.Errorf("boot at the bounds: %.200s: %s", ok, r)
		}
	}
}

// changes-since lists the servers changed at or after a time, deleted
// ones too, as Nova.
func TestServerListChangesSince(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	createFlavor(t, e, `{"flavor": {"name": "f", "id": "f", "ram": 1, "vcpus": 1, "disk": 1}}`)
	boot := func(name string) string {
		r := do(t, e.ts, http.MethodPost, computeBase+"/servers", adminToken,
			`{"server": {"name": "`+name+`", "imageRef": "http://img/a", "flavorRef": "f", "networks": "none"}}`, nil)
		if r.code != http.StatusAccepted {
			t.Fatalf("boot %s: %s", name, r)
		}
		return get(t, r.json(t), "server", "id").(string)
	}
	boot("kept")
	gone := boot("gone")
	if r := do(t, e.ts, http.MethodDelete, computeBase+"/servers/"+gone, adminToken, "", nil); r.code != http.StatusNoContent {
		t.Fatalf("delete: %s", r)
	}
	names := func(query string) []string {
		r := do(t, e.ts, http.MethodGet, computeBase+"/servers?"+query, adminToken, "", nil)
		if r.code != http.StatusOK {
			t.Fatalf("list ?%s: %s", query, r)
		}
		var out []string
		for _, s := range get(t, r.json(t), "servers").([]any) {
			out = append(out, s.(map[string]any)["name"].(string))
		}
		slices.Sort(out)
		return out
	}
	if got := names(""); !slices.Equal(got, []string{"kept"}) {
		t.Errorf("list: %v, want kept only", got)
	}
	if got := names("changes-since=2000-01-01T00:00:00Z"); !slices.Equal(got, []string{"gone", "kept"}) {
		t.Errorf("changes-since 2000: %v, want the deleted server too", got)
	}
	if got := names("changes-since=" + url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339))); len(got) != 0 {
		t.Errorf("changes-since in an hour: %v, want none", got)
	}
	if got := names("changes-since=2000-01-01"); len(got) != 2 {
		t.Errorf("changes-since a date: %v, want both", got)
	}
}
