package core

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/wire"
)

// stdJSON is what json.Encoder writes for v.
func stdJSON(t testing.TB, v any) (string, error) {
	t.Helper()
	var b bytes.Buffer
	err := json.NewEncoder(&b).Encode(v)
	return b.String(), err
}

// serialized is what the API's serializer writes for v.
func serialized(t testing.TB, v any) (string, error) {
	t.Helper()
	e := echo.New()
	rec := httptest.NewRecorder()
	c := e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), rec)
	err := jsonSerializer{}.Serialize(c, v, "")
	return rec.Body.String(), err
}

// Every answer is written byte for byte as json.Encoder writes it.
func TestJSONSerializerIsEncodingJSON(t *testing.T) {
	desc := "a <b> & c"
	values := []any{
		nil, true, false, "", "plain", `quo"te`, `back\slash`, "<html>&", "caf\u00e9", "tab\t", "\x7f", "\u2028", "bad \xff utf-8",
		42, -1.5, 1e21, json.Number("12"), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), []string{"a"}, []any(nil), []any{},
		map[string]any(nil), map[string]any{},
		map[string]any{"b": 1, "a": "x", "A": nil, "<k>": true, "ü": 2.5, "": "empty", "k\"q": []any{1, "2", map[string]any{"z": 1, "y": 2}}},
		map[string]any{"server": map[string]any{"id": "1", "links": []wire.Link{{Rel: "self", Href: "http://h/x?a=1&b=<2>"}},
			"metadata": map[string]string{"k": "v", "<": ">"}, "description": &desc, "flavor": map[string]any{"extra_specs": map[string]string{}}}},
		map[string]wire.NovaError{"badRequest": {Code: 400, Message: "bad <input>"}},
		[]any{map[string]any{"a": []any{nil, []any{}}}},
	}
	for _, v := range values {
		want, werr := stdJSON(t, v)
		got, gerr := serialized(t, v)
		if got != want || (werr == nil) != (gerr == nil) {
			t.Errorf("%#v:\n got %q, %v\nwant %q, %v", v, got, gerr, want, werr)
		}
	}
	// An unsupported value: encoding/json's error, nothing written.
	for _, v := range []any{math.NaN(), map[string]any{"a": map[string]any{"b": math.Inf(1)}}, []any{1, make(chan int)}} {
		_, werr := stdJSON(t, v)
		got, gerr := serialized(t, v)
		if werr == nil || gerr == nil || gerr.Error() != werr.Error() || got != "" {
			t.Errorf("%#v: got %q, %v; want nothing and %v", v, got, gerr, werr)
		}
	}
}

// Random nested objects, keys and strings included, come out as
// encoding/json writes them.
func TestJSONSerializerRandomObjects(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "B", "0", " ", "<", ">", "&", `"`, `\`, "\n", "\x00", "é", "\u2028", "\xff", "-", ":"}
	str := func() string {
		var b strings.Builder
		for range r.IntN(6) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := r.IntN(8); {
		case depth > 3 || k == 0:
			return str()
		case k == 1:
			return r.IntN(1000) - 500
		case k == 2:
			return r.Float64()
		case k == 3:
			return nil
		case k == 4:
			s := make([]any, r.IntN(4))
			for i := range s {
				s[i] = gen(depth + 1)
			}
			return s
		case k == 5:
			return map[string]string{str(): str()}
		}
		m := map[string]any{}
		for range r.IntN(6) {
			m[str()] = gen(depth + 1)
		}
		return m
	}
	for range 2000 {
		v := gen(0)
		want, werr := stdJSON(t, v)
		got, gerr := serialized(t, v)
		if got != want || werr != nil || gerr != nil {
			t.Fatalf("%#v:\n got %q, %v\nwant %q, %v", v, got, gerr, want, werr)
		}
	}
}

// A value that fails to encode leaves the pooled answer without the keys
// of the objects it was writing (which would be kept, and grow the next
// answer's).
func TestJSONSerializerErrorKeepsNoKeys(t *testing.T) {
	a := &answer{}
	a.enc = json.NewEncoder(&a.buf)
	v := map[string]any{"a": map[string]any{"b": math.Inf(1), "c": 1}, "d": 2}
	if err := a.value(v); err == nil {
		t.Fatal("an infinity encoded without error")
	}
	if len(a.keys) != 0 {
		t.Fatalf("keys left after the error: %q", a.keys)
	}
}
