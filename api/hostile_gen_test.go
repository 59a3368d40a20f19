package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/wire"
)

// The requests of TestHostileInput, drawn from one seeded source: every
// route of the route table, with its parameters, query, headers and body
// made valid, wrong or hostile.

// Markers a body's strings may hold, which the marshalled JSON gets as
// text encoding/json would never write: a lone UTF-16 surrogate escape,
// bytes that are no UTF-8.
const (
	markLoneSurrogate = "\x00LONE-SURROGATE\x00"
	markInvalidUTF8   = "\x00INVALID-UTF8\x00"
)

var markRaw = map[string]string{
	mustMarshal(markLoneSurrogate): `"a\ud800b"`,
	mustMarshal(markInvalidUTF8):   "\"a\xff\xfeb\"",
}

func mustMarshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// hostileStrings are the strings the fuzzer puts where a string goes.
var hostileStrings = []string{
	"", " ", "a\x00b", "\x00", "a\r\nb", "line\nbreak", "tab\there", "\u202eevil", "x\u2066y\u2069", "\u200bzero",
	markLoneSurrogate, markInvalidUTF8, "🚀", " lead", "trail ", strings.Repeat("n", 256), strings.Repeat("é", 255),
	strings.Repeat("i", 2049), "../../etc/passwd", "%00", "<script>", "a/b", "a:b", "1.2.3", "::1", "not-a-uuid",
	"6f1c2a70-0000-4000-8000-0000000000aa", "AUTO", "MANUAL", "True", "yes", "0", "-1", "1e308", "\u0085next", "\x7f",
}

// hostileValues are the values of any type the fuzzer puts anywhere.
func hostileValue(r *rand.Rand) any {
	switch r.IntN(12) {
	case 0:
		return r.IntN(3) - 1
	case 1:
		return []any{1e308, -1e308, 1.5, 2147483648, 9223372036854775807.0, 0.0}[r.IntN(6)]
	case 2:
		return r.IntN(2) == 0
	case 3:
		return nil
	case 4:
		return []any{}
	case 5:
		return map[string]any{}
	case 6:
		return strings.Repeat("x", 200<<10+r.IntN(1000)) // a large string, in the body limit
	case 7:
		return map[string]any{"nested": map[string]any{"deeper": []any{"x", 1}}}
	}
	return hostileStrings[r.IntN(len(hostileStrings))]
}

// fixture holds what exists: the ids the fuzzer's valid requests name.
type fixture struct {
	server, flavor, keyPair, spec string
}

// pathValue fills one path parameter: usually what exists, else a name
// that does not or a hostile one (escaped into the path). Hosts and
// services are never real ones: forcing a real host down would change
// the state behind the fuzzer's back.
func pathValue(r *rand.Rand, fx fixture, method, route, param string) string {
	known := map[string]string{"uuid": "6f1c2a70-0000-4000-8000-0000000000ab", "rc": "VCPU", "consumer": fx.server}
	switch {
	case strings.Contains(route, "/flavors/:id"):
		known["id"] = fx.flavor
	case strings.Contains(route, "/servers/:id"), strings.Contains(route, "/owners/:id"):
		known["id"] = fx.server
	}
	known["key"], known["name"] = fx.spec, ""
	if strings.Contains(route, "os-keypairs") {
		known["name"] = fx.keyPair
	}
	if method == "DELETE" && known[param] != "" {
		// The fixture stays: a delete names what the fuzzer made.
		known[param] = fmt.Sprintf("fz-%d", r.IntN(2000))
	}
	switch n := r.IntN(10); {
	case n < 6 && known[param] != "":
		return url.PathEscape(known[param])
	case n < 8:
		return "nope"
	}
	s := hostileStrings[r.IntN(len(hostileStrings))]
	if len(s) > 300 {
		s = s[:300]
	}
	s = strings.ReplaceAll(strings.ReplaceAll(s, markLoneSurrogate, "\xed\xa0\x80"), markInvalidUTF8, "\xff")
	return url.PathEscape(s)
}

// queries are the query strings the fuzzer adds to a read.
var queries = []string{"", "", "", "limit=-1", "limit=0", "limit=abc", "limit=99999999999999999999", "marker=nope",
	"marker=%00", "is_public=maybe", "is_public=none", "consistency=bogus", "consistency=linearizable", "all_tenants=1",
	"all_tenants=x", "minRam=x", "minDisk=-1", "with_servers=maybe", "name=%00%0D%0A", "status=%E2%80%AE", "deleted=true",
	"resources=VCPU:x", "required=%00", "member_of=in:x", "user_id=someone", "host=%00", "local=true"}

// writes are the routes template makes a valid body for.
var writes = []string{"POST /flavors", "PUT /flavors/:id", "POST /flavors/:id/os-extra_specs", "PUT /flavors/:id/os-extra_specs/:key",
	"POST /flavors/:id/action", "POST /servers", "POST /servers", "POST /servers", "PUT /servers/:id", "POST /servers/:id/action",
	"POST /os-keypairs"}

// template is a valid body of a route's write, given its path values.
func template(r *rand.Rand, route string, vals map[string]string, seq int) any {
	name := fmt.Sprintf("fz-%d", seq)
	switch route {
	case "POST " + wire.ComputePrefix + "/flavors":
		return map[string]any{"flavor": map[string]any{"name": name, "id": name, "ram": 1, "vcpus": 1, "disk": 1,
			"description": "d", "os-flavor-access:is_public": true, "rxtx_factor": 1.0, "swap": 0, "OS-FLV-EXT-DATA:ephemeral": 0}}
	case "PUT " + wire.ComputePrefix + "/flavors/:id":
		return map[string]any{"flavor": map[string]any{"description": name}}
	case "POST " + wire.ComputePrefix + "/flavors/:id/os-extra_specs":
		return map[string]any{"extra_specs": map[string]any{"k-" + name: "v", "hw:numa_nodes": 2}}
	case "PUT " + wire.ComputePrefix + "/flavors/:id/os-extra_specs/:key":
		k, _ := url.PathUnescape(vals["key"])
		return map[string]any{k: "v"}
	case "POST " + wire.ComputePrefix + "/flavors/:id/action":
		verb := []string{"addTenantAccess", "removeTenantAccess"}[r.IntN(2)]
		return map[string]any{verb: map[string]any{"tenant": "demo-b"}}
	case "POST " + wire.ComputePrefix + "/servers":
		s := map[string]any{"name": name, "imageRef": "http://img/a", "flavorRef": "f", "networks": "none",
			"metadata": map[string]any{"k": "v"}, "accessIPv4": "192.0.2.1", "min_count": 1, "OS-DCF:diskConfig": "AUTO"}
		if r.IntN(2) == 0 {
			s["key_name"] = "k" // the static admin's and ann's
		}
		if r.IntN(2) == 0 {
			s["networks"] = []any{map[string]any{"uuid": "6f1c2a70-0000-4000-8000-0000000000aa"}}
		}
		return map[string]any{"server": s}
	case "PUT " + wire.ComputePrefix + "/servers/:id":
		return map[string]any{"server": map[string]any{"name": name}}
	case "POST " + wire.ComputePrefix + "/servers/:id/action":
		return []any{
			map[string]any{"os-stop": nil}, map[string]any{"reboot": map[string]any{"type": "HARD"}},
			map[string]any{"rebuild": map[string]any{"imageRef": "http://img/b"}}, map[string]any{"lock": map[string]any{"locked_reason": "r"}},
			map[string]any{"unlock": nil}, map[string]any{"restore": nil}, map[string]any{"os-start": nil},
		}[r.IntN(7)]
	case "POST " + wire.ComputePrefix + "/os-keypairs":
		return map[string]any{"keypair": map[string]any{"name": name, "public_key": testPubKey}}
	case "PUT " + wire.ComputePrefix + "/os-services/:id":
		return map[string]any{"status": "disabled", "disabled_reason": "r"}
	case "POST " + wire.OwnersPath + "/:id/move":
		return map[string]any{"host": "nope"}
	case "POST " + wire.FlavorMigrationPath:
		return map[string]any{"resource_class": "baremetal-gold"}
	case "POST " + wire.AdoptServerPath:
		return map[string]any{"id": "6f1c2a70-0000-4000-8000-0000000000ac", "name": name, "image_ref": "http://img/a",
			"node_uuid": "6f1c2a70-0000-4000-8000-0000000000ad", "flavor": map[string]any{"id": "bm", "name": "bm", "vcpus": 1, "ram": 1, "disk": 1}}
	case "POST " + wire.RemovePeerPath:
		return map[string]any{"name": []string{"nobody", "p1", "p2", "p3"}[r.IntN(4)]}
	case "POST " + wire.KeyringPath, "PUT " + wire.KeyringPath, "DELETE " + wire.KeyringPath:
		return map[string]any{"key": "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="}
	}
	return map[string]any{}
}

// mutate changes the value tree: a leaf becomes a hostile value, a field
// is added or dropped, a collection becomes huge. protected keys are
// never dropped (without its public key a key pair is generated, which
// takes long under the race detector).
func mutate(r *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 || r.IntN(6) == 0 {
			x[hostileStrings[r.IntN(len(hostileStrings))]] = hostileValue(r)
			return x
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		k := keys[r.IntN(len(keys))]
		switch n := r.IntN(10); {
		case n == 0 && k != "public_key":
			delete(x, k)
		case n == 1:
			x[k] = huge(r, k)
		default:
			x[k] = mutate(r, x[k])
		}
		return x
	case []any:
		if len(x) == 0 || r.IntN(4) == 0 {
			return append(x, hostileValue(r))
		}
		i := r.IntN(len(x))
		x[i] = mutate(r, x[i])
		return x
	}
	return hostileValue(r)
}

// hostileLeaf replaces one string of the value tree, or one key of an
// object, with a hostile string.
func hostileLeaf(r *rand.Rand, v any) any {
	var leaves []func(string)
	var walk func(v any, set func(any))
	walk = func(v any, set func(any)) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k], func(nv any) { x[k] = nv })
				leaves = append(leaves, func(s string) { kv := x[k]; delete(x, k); x[s] = kv })
			}
		case []any:
			for i := range x {
				walk(x[i], func(nv any) { x[i] = nv })
			}
		case string:
			leaves = append(leaves, func(s string) { set(s) })
		}
	}
	walk(v, func(any) {})
	if len(leaves) == 0 {
		return mutate(r, v)
	}
	leaves[r.IntN(len(leaves))](hostileStrings[r.IntN(len(hostileStrings))])
	return v
}

// huge is a collection far beyond its bound, for the field named key.
func huge(r *rand.Rand, key string) any {
	switch key {
	case "networks":
		nets := make([]any, 10000)
		for i := range nets {
			nets[i] = map[string]any{"uuid": "6f1c2a70-0000-4000-8000-0000000000aa"}
		}
		return nets
	case "tags", "security_groups":
		out := make([]any, 5000)
		for i := range out {
			out[i] = fmt.Sprint(i)
		}
		return out
	}
	m := make(map[string]any, 20000)
	for i := range 20000 {
		m[fmt.Sprintf("k%d", i)] = "v"
	}
	if r.IntN(2) == 0 {
		m = map[string]any{strings.Repeat("k", 300<<10): strings.Repeat("v", 300<<10)}
	}
	return m
}

// rawBodies are whole bodies that are no JSON object, or no JSON at all.
var rawBodies = []string{"", " ", "null", "[]", "[1,2]", `"text"`, "42", "{", `{"a":}`, "<xml/>", "key=value",
	"{}}", "{} {}", "\xff\xfe", `{"a": "\ud800"}`, `{"a": "\udc00\ud800"}`, strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
	`{"a": 1, "a": 2}`, "{\"a\": \"\x00\"}", strings.Repeat(" ", 1000) + "{}"}

// body is the body of a write to route: a mutated template, a raw body
// that is no JSON object, or one over the size limit.
func body(r *rand.Rand, route string, vals map[string]string, seq int) []byte {
	switch n := r.IntN(100); {
	case n < 8:
		return []byte(rawBodies[r.IntN(len(rawBodies))])
	case n < 9:
		return bytes.Repeat([]byte("x"), core.DefaultMaxBodyBytes+1)
	}
	v := template(r, route, vals, seq)
	switch n := r.IntN(100); {
	case n < 15: // as it is: what is stored grows
	case n < 60: // one string of it hostile: it must be refused, or stored as Nova would
		v = hostileLeaf(r, v)
	default:
		for range 1 + r.IntN(3) {
			v = mutate(r, v)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{"unmarshalable": true}`)
	}
	for mark, raw := range markRaw {
		b = bytes.ReplaceAll(b, []byte(mark), []byte(raw))
	}
	return b
}

// methods are what a request may be sent with instead of its route's.
var methods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// fillPath fills the route's parameters, for a request with method.
func fillPath(r *rand.Rand, fx fixture, rt api.Route, method string) (string, map[string]string) {
	vals := map[string]string{}
	segs := strings.Split(rt.Path, "/")
	for i, seg := range segs {
		switch {
		case strings.HasPrefix(seg, ":"):
			vals[seg[1:]] = pathValue(r, fx, method, rt.Path, seg[1:])
			segs[i] = vals[seg[1:]]
		case seg == "*":
			segs[i] = []string{"x", "traits/CUSTOM_X", "resource_providers", "a/b/c"}[r.IntN(4)]
		}
	}
	return strings.Join(segs, "/"), vals
}
