package api_test

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/core"
)

// The answers to bad requests, byte for byte: the body's reading and
// decoding (one decode, its errors those of encoding/json), Nova's typed
// fields and the JSON the answers are written with are all on the
// request's hot path and must not change a word of them.
func TestErrorBodiesArePinned(t *testing.T) {
	srv, err := api.New(api.Config{Tokens: map[string]core.Role{adminToken: core.RoleAdmin},
		Logger: slog.New(slog.DiscardHandler)}, newLocalCluster())
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	const flavors, servers = computeBase + "/flavors", computeBase + "/servers"
	const good = `"name": "n", "ram": 1, "vcpus": 1, "disk": 1`
	for _, tc := range []struct {
		method, path, body string
		hdr                map[string]string
		code               int
		want               string
	}{
		{"POST", flavors, ``, nil, 400, `{"badRequest":{"code":400,"message":"the request body is empty; send a JSON object"}}`},
		{"POST", flavors, " \n\t ", nil, 400, `{"badRequest":{"code":400,"message":"the request body is empty; send a JSON object"}}`},
		{"POST", flavors, `{`, nil, 400, `{"badRequest":{"code":400,"message":"malformed JSON body: unexpected EOF"}}`},
		{"POST", flavors, `nope`, nil, 400, `{"badRequest":{"code":400,"message":"malformed JSON body: invalid character 'o' in literal null (expecting 'u')"}}`},
		{"POST", flavors, `{"flavor": {` + good + `, "bogus": 1}}`, nil, 400, `{"badRequest":{"code":400,"message":"malformed JSON body: json: unknown field \"bogus\""}}`},
		{"POST", flavors, `{"flavor": {` + good + `}} x`, nil, 400, `{"badRequest":{"code":400,"message":"malformed JSON body: unexpected data after the JSON object"}}`},
		{"POST", flavors, `{"flavor": {` + good + `}}}`, nil, 400, `{"badRequest":{"code":400,"message":"malformed JSON body: unexpected data after the JSON object"}}`},
		{"POST", flavors, "{\"flavor\": {\"name\": \"\xff\"}}", nil, 400, `{"badRequest":{"code":400,"message":"Malformed request body: the body is not UTF-8 text"}}`},
		{"POST", flavors, `{"flavor": {"name": "a\ud800b", "ram": 1, "vcpus": 1, "disk": 1}}`, nil, 400, `{"badRequest":{"code":400,"message":"Malformed request body: a string holds a lone UTF-16 surrogate (\\ud800), which is no character"}}`},
		{"POST", flavors, `{"flavor": {"name": 5, "ram": 1, "vcpus": 1, "disk": 1}}`, nil, 400, `{"badRequest":{"code":400,"message":"malformed JSON body: json: cannot unmarshal number into Go struct field flavorCreate.flavor.name of type string"}}`},
		{"POST", flavors, `{"flavor": {"name": "n", "ram": "many", "vcpus": 1, "disk": 1}}`, nil, 400, `{"badRequest":{"code":400,"message":"Invalid input for field/attribute ram. Value: many. 'many' does not match '^[0-9]+$'"}}`},
		{"POST", flavors, `{"flavor": {"name": "n", "ram": 1.5, "vcpus": 1, "disk": 1}}`, nil, 400, `{"badRequest":{"code":400,"message":"Invalid input for field/attribute ram. Value: 1.5. 1.5 is not of type 'integer', 'string'"}}`},
		{"POST", flavors, `{"flavor": {"name": "n", "ram": -1, "vcpus": 1, "disk": 1}}`, nil, 400, `{"badRequest":{"code":400,"message":"Invalid input for field/attribute ram. Value: -1. -1 is less than the minimum of 1"}}`},
		{"POST", flavors, `{"flavor": {"name": "n", "ram": 1e30, "vcpus": 1, "disk": 1}}`, nil, 400, `{"badRequest":{"code":400,"message":"Invalid input for field/attribute ram. Value: 1e30. 1e30 is greater than the maximum of 2147483647"}}`},
		{"POST", flavors, `{"flavor": {"name": "n", "ram": "1e3", "vcpus": 1, "disk": 1}}`, nil, 400, `{"badRequest":{"code":400,"message":"Invalid input for field/attribute ram. Value: 1e3. '1e3' does not match '^[0-9]+$'"}}`},
		{"POST", flavors, `{"flavor": {"name": "n", "ram": true, "vcpus": 1, "disk": 1}}`, nil, 400, `{"badRequest":{"code":400,"message":"Invalid input for field/attribute ram. Value: true. true is not of type 'integer', 'string'"}}`},
		{"POST", flavors, `{"flavor": {"id": "bad/id", ` + good + `}}`, nil, 400, `{"badRequest":{"code":400,"message":"Invalid input for field/attribute id. Value: bad/id. 'bad/id' does not match '^(?! )[a-zA-Z0-9. _-]+(?\u003c! )$'"}}`},
		{"POST", flavors, `{"flavor": {"id": "caf\u00e9", ` + good + `}}`, nil, 400, `{"badRequest":{"code":400,"message":"Invalid input for field/attribute id. Value: café. 'café' does not match '^(?! )[a-zA-Z0-9. _-]+(?\u003c! )$'"}}`},
		{"POST", flavors, `{"flavor": {"id": [], ` + good + `}}`, nil, 400, `{"badRequest":{"code":400,"message":"Invalid input for field/attribute id. Value: []. [] is not of type 'string', 'number'"}}`},
		{"POST", flavors, `{"flavor": {"os-flavor-access:is_public": "maybe", ` + good + `}}`, nil, 400, `{"badRequest":{"code":400,"message":"Invalid input for field/attribute os-flavor-access:is_public. Value: \\\"maybe\\\". \\\"maybe\\\" is not one of [True, 'True', 'TRUE', 'true', '1', 'ON', 'On', 'on', 'YES', 'Yes', 'yes', False, 'False', 'FALSE', 'false', '0', 'OFF', 'Off', 'off', 'NO', 'No', 'no']"}}`},
		{"POST", flavors, `{"flavor": {"name": "\u003cb\u003e\u0026", "ram": 0, "vcpus": 1, "disk": 1}}`, nil, 400, `{"badRequest":{"code":400,"message":"Invalid input for field/attribute ram. Value: 0. 0 is less than the minimum of 1"}}`},
		{"POST", flavors, `{"flavor": {` + good + `}}`, map[string]string{"Content-Type": "text/xml"}, 415, `{"badMediaType":{"code":415,"message":"Unsupported Content-Type"}}`},
		{"POST", flavors, `{"flavor": {` + good + `}}`, map[string]string{core.ReadYourWritesHeader: "maybe"}, 400, `{"badRequest":{"code":400,"message":"X-Corral-Read-Your-Writes must be true or false (got \"maybe\")"}}`},
		{"POST", servers, `{"server": {"name": "s", "imageRef": "i", "flavorRef": true}}`, nil, 400, `{"badRequest":{"code":400,"message":"Invalid input for field/attribute flavorRef. Value: true. true is not of type 'string', 'number'"}}`},
		{"POST", servers, `{"server": {"name": "s", "imageRef": "i", "flavorRef": "f", "min_count": "x"}}`, nil, 400, `{"badRequest":{"code":400,"message":"Invalid input for field/attribute min_count. Value: x. 'x' does not match '^[0-9]+$'"}}`},
		{"POST", servers, `{"server": {"name": "s", "imageRef": "i", "flavorRef": "f", "networks": 7}}`, map[string]string{"OpenStack-API-Version": "compute 2.37"}, 400, `{"badRequest":{"code":400,"message":"networks must be a list of {\"uuid\": ..., \"port\": ..., \"fixed_ip\": ...}: json: cannot unmarshal number into Go value of type []nova.bootNetwork"}}`},
		{"GET", computeBase + "/nowhere", ``, nil, 404, `{"itemNotFound":{"code":404,"message":"The resource could not be found."}}`},
		{"PATCH", flavors, `{}`, nil, 405, `{"badMethod":{"code":405,"message":"The method PATCH is not allowed for this resource."}}`},
		{"GET", computeBase + "/flavors/none", ``, nil, 404, `{"itemNotFound":{"code":404,"message":"flavor none does not exist: list flavors to see the existing IDs"}}`},
		{"GET", computeBase + "/flavors", ``, map[string]string{"OpenStack-API-Version": "compute 2.99"}, 406, `{"computeFault":{"code":406,"message":"Version 2.99 is not supported by the API. Minimum is 2.1 and maximum is 2.79."}}`},
		{"POST", flavors, `{"flavor": {"id": "pinned", ` + good + `}}`, map[string]string{"OpenStack-API-Version": "compute 2.61"}, 200,
			`{"flavor":{"OS-FLV-DISABLED:disabled":false,"OS-FLV-EXT-DATA:ephemeral":0,"description":null,"disk":1,"extra_specs":{},"id":"pinned","links":[{"rel":"self","href":"http://example.com/compute/v2.1/flavors/pinned"},{"rel":"bookmark","href":"http://example.com/compute/flavors/pinned"}],"name":"n","os-flavor-access:is_public":true,"ram":1,"rxtx_factor":1,"swap":"","vcpus":1}}`},
	} {
		var rd *strings.Reader
		req := httptest.NewRequest(tc.method, tc.path, nil)
		if tc.body != "" {
			rd = strings.NewReader(tc.body)
			req = httptest.NewRequest(tc.method, tc.path, rd)
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("X-Auth-Token", adminToken)
		for k, v := range tc.hdr {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if got := strings.TrimSuffix(w.Body.String(), "\n"); w.Code != tc.code || got != tc.want {
			t.Errorf("%s %s %q:\n got %d %s\nwant %d %s", tc.method, tc.path, tc.body, w.Code, got, tc.code, tc.want)
		}
		if w.Code >= 400 && w.Header().Get("X-Openstack-Request-Id") == "" {
			t.Errorf("%s %s %q: no request id", tc.method, tc.path, tc.body)
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s %q: Content-Type %q", tc.method, tc.path, tc.body, ct)
		}
	}
}
