package nova

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
)

func TestNovaInteger(t *testing.T) {
	for raw, want := range map[string]int64{`1`: 1, `"1"`: 1, `1.0`: 1, `"0042"`: 42, `2147483647`: math.MaxInt32, `"2147483647"`: math.MaxInt32} {
		if got, err := novaInteger("f", json.RawMessage(raw), 1, math.MaxInt32); err != nil || got != want {
			t.Errorf("novaInteger(%s) = %d, %v; want %d", raw, got, err, want)
		}
	}
	for _, raw := range []string{`0`, `"0"`, `-1`, `"-1"`, `1.5`, `"1.5"`, `""`, `" 1"`, `"1e3"`, `true`, `null`, `[]`, `{}`,
		`2147483648`, `"2147483648"`, `1e20`, `1e400`, `"99999999999999999999999"`} {
		if got, err := novaInteger("f", json.RawMessage(raw), 1, math.MaxInt32); !errors.Is(err, core.ErrBadRequest) ||
			!strings.Contains(err.Error(), "Invalid input for field/attribute f.") {
			t.Errorf("novaInteger(%s) = %d, %v; want Nova's 400", raw, got, err)
		}
	}
}

func TestNovaBoolean(t *testing.T) {
	for raw, want := range map[string]bool{`true`: true, `"True"`: true, `"on"`: true, `"1"`: true, `"YES"`: true,
		`false`: false, `"off"`: false, `"0"`: false, `"No"`: false} {
		if got, err := novaBoolean("b", json.RawMessage(raw)); err != nil || got != want {
			t.Errorf("novaBoolean(%s) = %t, %v", raw, got, err)
		}
	}
	for _, raw := range []string{`1`, `0`, `"yEs"`, `"t"`, `null`, `""`} {
		if _, err := novaBoolean("b", json.RawMessage(raw)); err == nil {
			t.Errorf("novaBoolean(%s) passed", raw)
		}
	}
}

func TestNovaRxTxFactor(t *testing.T) {
	for raw, want := range map[string]float64{`1`: 1, `0.5`: 0.5, `"2"`: 2, `"2.25"`: 2.25, `3.4e38`: 3.4e38} {
		if got, err := novaRxTxFactor(json.RawMessage(raw)); err != nil || got != want {
			t.Errorf("novaRxTxFactor(%s) = %v, %v", raw, got, err)
		}
	}
	for _, raw := range []string{`0`, `-1`, `"0"`, `"1."`, `".5"`, `"1e3"`, `1e308`, `1e400`, `true`, `"x"`} {
		if _, err := novaRxTxFactor(json.RawMessage(raw)); err == nil {
			t.Errorf("novaRxTxFactor(%s) passed", raw)
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"a", "web 1", "café", "🚀 rocket", "x.y-z_(1)", strings.Repeat("é", 255)} {
		if err := checkName("name", ok); err != nil {
			t.Errorf("checkName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", " a", "a ", "\ta", "a\u00a0", "a\x00b", "a\nb", "a\u202eb", "a\u200bb", "a\u2028b",
		"a\ue000b", "\u0085", strings.Repeat("x", 256)} {
		if err := checkName("name", bad); !errors.Is(err, core.ErrBadRequest) {
			t.Errorf("checkName(%q) = %v, want a 400", bad, err)
		}
	}
}

// FuzzCheckName: what Nova's formats accept, Apply stores (the bounds of
// fsm never refuse what the API took).
func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"web-1", "a b", "\u202e", "a\x00", "é", "\t", "\u3000x\u3000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkName("name", s) == nil {
			if err := fsm.CheckText("name", s, maxNameLen, false); err != nil {
				t.Fatalf("checkName takes %q, fsm refuses it: %v", s, err)
			}
		}
		if checkDescription("description", s, maxNameLen) == nil {
			if err := fsm.CheckText("description", s, maxNameLen, true); err != nil {
				t.Fatalf("checkDescription takes %q, fsm refuses it: %v", s, err)
			}
		}
		if checkMetadataValue("k", s) == nil {
			if err := fsm.CheckText("metadata", s, fsm.MaxMetadataValueLen, true); err != nil {
				t.Fatalf("checkMetadataValue takes %q, fsm refuses it: %v", s, err)
			}
		}
		if checkMetadataKey("metadata", s) == nil {
			if err := fsm.CheckText("metadata key", s, fsm.MaxMetadataKeyLen, false); err != nil {
				t.Fatalf("checkMetadataKey takes %q, fsm refuses it: %v", s, err)
			}
		}
		if checkFlavorID(s) == nil {
			if err := fsm.CheckText("flavor id", s, fsm.MaxFlavorIDLen, false); err != nil {
				t.Fatalf("checkFlavorID takes %q, fsm refuses it: %v", s, err)
			}
		}
	})
}

// FuzzNovaInteger: an integer read is within its bounds, from a JSON
// integer or a string of digits only.
func FuzzNovaInteger(f *testing.F) {
	for _, s := range []string{`1`, `"12"`, `1.0`, `-0`, `"0x10"`, `1e3`, `"١"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n, err := novaInteger("f", json.RawMessage(raw), 1, math.MaxInt32)
		if err != nil {
			return
		}
		if n < 1 || n > math.MaxInt32 {
			t.Fatalf("%s read as %d", raw, n)
		}
		var v any
		if json.Unmarshal([]byte(raw), &v) != nil {
			t.Fatalf("%q is no JSON, read as %d", raw, n)
		}
		if s, ok := v.(string); ok && strings.Trim(s, "0123456789") != "" {
			t.Fatalf("%q read as %d", raw, n)
		}
	})
}

func TestCheckAccessIPsCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"0000:0000:0000:0000:0000:babe:220.12.22.2": "::babe:dc0c:1602",
		"2001:DB8:0:0:1:0:0:1":                      "2001:db8::1:0:0:1",
		"::1.2.3.4":                                 "::1.2.3.4",
		"0:0:0:0:0:ffff:102:304":                    "::ffff:1.2.3.4",
		"::ffff:0:1.2.3.4":                          "::ffff:0:102:304",
		"::255.255.255.255":                         "::255.255.255.255",
		"::1":                                       "::1",
		"::":                                        "::",
		"fe80:0:0:0:0:0:0:1":                        "fe80::1",
	} {
		v6 := in
		if err := checkAccessIPs(nil, &v6); err != nil || v6 != want {
			t.Errorf("accessIPv6 %q kept as %q (%v), want %q", in, v6, err, want)
		}
	}
	v4 := "1.1.1.1"
	if err := checkAccessIPs(&v4, nil); err != nil || v4 != "1.1.1.1" {
		t.Errorf("accessIPv4: %q, %v", v4, err)
	}
	for _, bad := range [][2]string{{"01.1.1.1", ""}, {"::1", ""}, {"", "1.1.1.1"}, {"", "fe80::1%eth0"}, {"", ""}} {
		v4, v6 := bad[0], bad[1]
		p4, p6 := &v4, &v6
		if v4 == "" && v6 != "" {
			p4 = nil
		}
		if err := checkAccessIPs(p4, p6); err == nil {
			t.Errorf("checkAccessIPs(%q, %q) took them", bad[0], bad[1])
		}
	}
}

// jsonString and jsonNumber read a raw field as json.Unmarshal does,
// their shortcuts included.
func TestJSONScalarsAsUnmarshal(t *testing.T) {
	for _, raw := range []string{`""`, `"a"`, `"flavor-1 x.y_z"`, `"\u00e9"`, `"é"`, `"a\"b"`, `"a\\b"`, `"\n"`, `"tab	in"`, `"~"`,
		"\"\x7f\"", `"\ud83d\ude00"`, `0`, `-0`, `1`, `-1`, `10`, `01`, `1.`, `1.5`, `.5`, `-`, `1e3`, `1E+3`, `1e-3`, `1e`, `1e+`,
		`123456789012345678901234567890`, `1.0`, `true`, `null`, `"`, `"a`, `a"`, `[]`, `{}`, `--1`, `+1`, `0x1`, `1 `} {
		var ws string
		wsErr := json.Unmarshal([]byte(raw), &ws)
		if s, ok := jsonString(json.RawMessage(raw)); raw != "" && raw[0] == '"' && (ok != (wsErr == nil) || s != ws) {
			t.Errorf("jsonString(%s) = %q, %t; json.Unmarshal: %q, %v", raw, s, ok, ws, wsErr)
		}
		var wn json.Number
		wnErr := json.Unmarshal([]byte(raw), &wn)
		if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
			continue
		}
		if n, ok := jsonNumber(json.RawMessage(raw)); ok != (wnErr == nil) || n != wn {
			t.Errorf("jsonNumber(%s) = %q, %t; json.Unmarshal: %q, %v", raw, n, ok, wn, wnErr)
		}
	}
}

func FuzzJSONScalarsAsUnmarshal(f *testing.F) {
	for _, s := range []string{`"a"`, `1.5e3`, `-0`, `"\u00e9"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if raw == "" {
			return
		}
		if raw[0] == '"' {
			var ws string
			wsErr := json.Unmarshal([]byte(raw), &ws)
			if s, ok := jsonString(json.RawMessage(raw)); ok != (wsErr == nil) || s != ws {
				t.Fatalf("jsonString(%s) = %q, %t; json.Unmarshal: %q, %v", raw, s, ok, ws, wsErr)
			}
		}
		if raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9' {
			var wn json.Number
			wnErr := json.Unmarshal([]byte(raw), &wn)
			if n, ok := jsonNumber(json.RawMessage(raw)); ok != (wnErr == nil) || n != wn {
				t.Fatalf("jsonNumber(%s) = %q, %t; json.Unmarshal: %q, %v", raw, n, ok, wn, wnErr)
			}
		}
	})
}
