package sim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

// appendJSON renders exactly what encoding/json does (HTML escaping off).
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	n := newNode(7, "1be26c0b-03f2-4f6c-9d2b-d1e3c2c1c0a1", "n-7", "fake-hardware")
	n.properties = map[string]any{"cpus": 8, "memory_mb": json.Number("16384"), "ratio": 2.5, "caps": "boot_mode:uefi",
		"nested": map[string]any{"a": []any{1, "x", nil, true}}, "empty": map[string]any{}, "none": []any{}}
	n.instanceInfo = map[string]any{"display_name": "tab\there \"quoted\" \\ <html> & é \u2028", "nilmap": map[string]any(nil)}
	n.traits = []string{"CUSTOM_A"}
	c := &call{s: &Server{allocs: newAllocStore()}, r: &http.Request{Host: "ironic.test"}, minor: latestMinor}
	for _, v := range []any{c.nodeDoc(n), map[string]any{"nodes": []any{c.nodeDoc(n)}, "next": "http://x/?a=1&b=2"},
		"plain", []any(nil), nil, false, []string{"a"}} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		if got := appendJSON(nil, v); !bytes.Equal(got, bytes.TrimRight(want.Bytes(), "\n")) {
			t.Fatalf("appendJSON:\n got %s\nwant %s", got, want.Bytes())
		}
	}
}
