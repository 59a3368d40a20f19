package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/corral-dev/corral/api/core"
)

// Tempest's compute response schemas, as scripts/tempest-schemas.py writes
// them from an installed Tempest into testdata/tempest: per client, per
// schema, the microversion ranges and the schema of each.

type tempestRange struct {
	min, max core.Microversion // zero: no bound
	status   []int
	body     *jsonschema.Schema // nil: the answer has no body
}

// tempestSchemas are the compiled schemas, by "client/name", and how many
// answers each has held.
type tempestSchemas struct {
	ranges  map[string][]tempestRange
	checked map[string]int
}

type tempestFile struct {
	Tempest string `json:"tempest"`
	Schemas map[string][]struct {
		Min    string `json:"min"`
		Max    string `json:"max"`
		Schema struct {
			StatusCode   []int           `json:"status_code"`
			ResponseBody json.RawMessage `json:"response_body"`
		} `json:"schema"`
	} `json:"schemas"`
}

// iso8601RE is what Tempest's iso8601-date-time format accepts of a full
// date and time (the iso8601 package's parse_date).
var iso8601RE = regexp.MustCompile(`^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([ T][0-9]{2}(:?[0-9]{2}(:?[0-9]{1,2}([.,][0-9]+)?)?)?(Z|[-+][0-9]{2}(:?[0-9]{2})?)?)?$`)

// loadTempestSchemas compiles every schema of testdata/tempest as Tempest
// checks them: JSON Schema draft 4, with the formats Tempest's checker
// asserts (ipv4, ipv6 and its iso8601-date-time) and no others.
func loadTempestSchemas(t *testing.T) tempestSchemas {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "tempest", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Tempest schemas in testdata/tempest (%v): run scripts/tempest-schemas.py", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft4)
	for _, name := range []string{"uuid", "uri", "base64"} {
		c.RegisterFormat(&jsonschema.Format{Name: name, Validate: func(any) error { return nil }})
	}
	c.RegisterFormat(&jsonschema.Format{Name: "iso8601-date-time", Validate: func(v any) error {
		if s, ok := v.(string); ok && !iso8601RE.MatchString(s) {
			return fmt.Errorf("%q is not an ISO 8601 date and time", s)
		}
		return nil
	}})
	out := tempestSchemas{ranges: map[string][]tempestRange{}, checked: map[string]int{}}
	for _, path := range files {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var f tempestFile
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		client := strings.TrimSuffix(filepath.Base(path), ".json")
		for name, ranges := range f.Schemas {
			for i, r := range ranges {
				tr := tempestRange{min: parseMV(t, r.Min), max: parseMV(t, r.Max), status: r.Schema.StatusCode}
				if len(r.Schema.ResponseBody) > 0 {
					doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.Schema.ResponseBody))
					if err != nil {
						t.Fatalf("%s %s: %v", path, name, err)
					}
					url := fmt.Sprintf("https://tempest.invalid/%s/%s/%d.json", client, name, i)
					if err := c.AddResource(url, doc); err != nil {
						t.Fatalf("%s %s: %v", path, name, err)
					}
					if tr.body, err = c.Compile(url); err != nil {
						t.Fatalf("%s %s: %v", path, name, err)
					}
				}
				out.ranges[client+"/"+name] = append(out.ranges[client+"/"+name], tr)
			}
		}
	}
	return out
}

func parseMV(t *testing.T, s string) core.Microversion {
	t.Helper()
	if s == "" {
		return core.Microversion{}
	}
	v, err := core.ParseMicroversion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// at is the schema Tempest uses for the answer at microversion mv.
func (s tempestSchemas) at(t *testing.T, name string, mv core.Microversion) tempestRange {
	t.Helper()
	for _, r := range s.ranges[name] {
		if (r.min == core.Microversion{} || !mv.Less(r.min)) && (r.max == core.Microversion{} || !r.max.Less(mv)) {
			return r
		}
	}
	t.Fatalf("Tempest has no schema %s at %s", name, mv)
	return tempestRange{}
}

// check holds an answer to Tempest's schema name at mv: its status among
// the schema's, its body valid (or empty when the schema has none).
func (s tempestSchemas) check(t *testing.T, name string, mv core.Microversion, r response) {
	t.Helper()
	sch := s.at(t, name, mv)
	s.checked[name]++
	ok := false
	for _, code := range sch.status {
		ok = ok || code == r.code
	}
	if !ok {
		t.Errorf("%s at %s: status %d, Tempest wants %v: %s", name, mv, r.code, sch.status, r.body)
		return
	}
	if sch.body == nil {
		if len(bytes.TrimSpace(r.body)) > 0 {
			t.Errorf("%s at %s: Tempest wants no body, got %s", name, mv, r.body)
		}
		return
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.body))
	if err != nil {
		t.Errorf("%s at %s: body is not JSON: %v: %s", name, mv, err, r.body)
		return
	}
	if err := sch.body.Validate(inst); err != nil {
		t.Errorf("%s at %s: Tempest's schema refuses the body: %v\n%s", name, mv, err, r.body)
	}
}

// refuses reports whether Tempest's schema name at mv refuses body.
func (s tempestSchemas) refuses(t *testing.T, name string, mv core.Microversion, body any) bool {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return s.at(t, name, mv).body.Validate(inst) != nil
}
