package driver

import (
	"testing"

	"github.com/corral-dev/corral/fsm"
)

// The driver matches a flavor's custom class against the nodes'
// resource classes normalised as Nova does.
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
		if got := fsm.NormalizeResourceClass(in); got != want {
			t.Errorf("NormalizeResourceClass(%q) = %q, want %q", in, got, want)
		}
		if got := fsm.NormalizeResourceClass(fsm.NormalizeResourceClass(in)); got != want {
			t.Errorf("not idempotent on %q: %q", in, got)
		}
	}
}
