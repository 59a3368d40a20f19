package ironic

import "testing"

func TestNormalizeResourceClass(t *testing.T) {
	for in, want := range map[string]string{
		"baremetal-gold":        "CUSTOM_BAREMETAL_GOLD",
		"gold":                  "CUSTOM_GOLD",
		"CUSTOM_GOLD":           "CUSTOM_GOLD",
		"custom_gold":           "CUSTOM_GOLD",
		"custom-gold":           "CUSTOM_GOLD",
		"bare.metal gold/v2":    "CUSTOM_BARE_METAL_GOLD_V2",
		"a--b":                  "CUSTOM_A__B",
		"große":                 "CUSTOM_GRO_E",
		"CUSTOM_BAREMETAL_GOLD": "CUSTOM_BAREMETAL_GOLD",
		"":                      "",
	} {
		if got := NormalizeResourceClass(in); got != want {
			t.Errorf("NormalizeResourceClass(%q) = %q, want %q", in, got, want)
		}
		if got := NormalizeResourceClass(NormalizeResourceClass(in)); got != want {
			t.Errorf("not idempotent on %q: %q", in, got)
		}
	}
}

func TestRawClassFor(t *testing.T) {
	nodes := []Node{
		{UUID: "c", ResourceClass: "Baremetal_Gold"},
		{UUID: "b", ResourceClass: "baremetal-gold"},
		{UUID: "a", ResourceClass: "silver"},
		{UUID: "0"},
	}
	for _, tc := range []struct {
		custom, want string
		ok           bool
	}{
		{"CUSTOM_BAREMETAL_GOLD", "baremetal-gold", true}, // b sorts before c
		{"baremetal-gold", "baremetal-gold", true},
		{"CUSTOM_SILVER", "silver", true},
		{"CUSTOM_BRONZE", "", false},
		{"", "", false},
	} {
		got, ok := RawClassFor(tc.custom, nodes)
		if got != tc.want || ok != tc.ok {
			t.Errorf("RawClassFor(%q) = %q %v, want %q %v", tc.custom, got, ok, tc.want, tc.ok)
		}
	}
	if nodes[0].UUID != "c" {
		t.Error("RawClassFor reordered its input")
	}
}
