package sched

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

func bareMetal(specs map[string]string) Flavor {
	s := map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1", "resources:VCPU": "0",
		"resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}
	maps.Copy(s, specs)
	return Flavor{Name: "bm", VCPUs: 64, RAM: 131072, Disk: 371, ExtraSpecs: s}
}

func TestParseStandardResourcesFromFields(t *testing.T) {
	r, err := Parse(Flavor{Name: "vm", VCPUs: 2, RAM: 1024, Disk: 10, Ephemeral: 5, Swap: 1025})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 17} // swap rounds up to 2 GiB
	if !maps.Equal(r.Resources, want) {
		t.Fatalf("resources %v, want %v", r.Resources, want)
	}
	if r.NodeClass() != "" || len(r.Capabilities) != 0 || r.Traits() != nil {
		t.Fatalf("a VM flavor asks for no node: %+v", r)
	}
}

func TestParseEveryForm(t *testing.T) {
	r, err := Parse(bareMetal(map[string]string{
		"trait:CUSTOM_RAID":          "required",
		"trait:HW_CPU_X86_AVX2":      "required",
		"trait:CUSTOM_SLOW":          "forbidden",
		"capabilities:boot_mode":     "uefi",
		"capabilities":               "supports_uefi, has_gpu ,disk_label:gpt",
		"hw:cpu_policy":              "dedicated", // not scheduling's
		"quota:disk_read_bytes_sec":  "1000",
		"resources:CUSTOM_EXTRA_NIC": "2",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"CUSTOM_BAREMETAL_GOLD": 1, "CUSTOM_EXTRA_NIC": 2}; !maps.Equal(r.Resources, want) {
		t.Fatalf("resources %v, want %v (zeroed standard classes removed)", r.Resources, want)
	}
	if got := r.Traits(); !slices.Equal(got, []string{"CUSTOM_RAID", "HW_CPU_X86_AVX2", "!CUSTOM_SLOW"}) {
		t.Fatalf("traits %v", got)
	}
	want := map[string]string{"boot_mode": "uefi", "supports_uefi": "true", "has_gpu": "true", "disk_label": "gpt"}
	if !maps.Equal(r.Capabilities, want) {
		t.Fatalf("capabilities %v, want %v", r.Capabilities, want)
	}
	if r.NodeClass() != "" {
		t.Fatalf("two custom classes: no node class, got %q", r.NodeClass())
	}
}

func TestParseMissionCommaForm(t *testing.T) {
	r, err := Parse(bareMetal(map[string]string{"capabilities": "supports_uefi,has_gpu"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"supports_uefi": "true", "has_gpu": "true"}; !maps.Equal(r.Capabilities, want) {
		t.Fatalf("capabilities %v, want %v", r.Capabilities, want)
	}
	if r.NodeClass() != "CUSTOM_BAREMETAL_GOLD" {
		t.Fatalf("node class %q", r.NodeClass())
	}
	// The comma form and the scoped form agree when they say the same.
	if _, err := Parse(bareMetal(map[string]string{"capabilities": "boot_mode:uefi", "capabilities:boot_mode": "uefi"})); err != nil {
		t.Fatalf("the same capability twice with the same value: %v", err)
	}
}

func TestParseZeroRemovesAClass(t *testing.T) {
	r, err := Parse(Flavor{Name: "f", VCPUs: 4, RAM: 512, ExtraSpecs: map[string]string{"resources:VCPU": "0", "resources:MEMORY_MB": "2048"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"MEMORY_MB": 2048}; !maps.Equal(r.Resources, want) {
		t.Fatalf("resources %v, want %v", r.Resources, want)
	}
}

func TestParseMalformed(t *testing.T) {
	cases := []struct {
		key, value, why string
	}{
		{"resources:CUSTOM_GOLD", "one", "whole number"},
		{"resources:CUSTOM_GOLD", "-1", "whole number"},
		{"resources:CUSTOM_GOLD", "2147483648", "whole number"},
		{"resources:CUSTOM_GOLD", "1.5", "whole number"},
		{"resources:custom_gold", "1", "upper case"},
		{"resources:", "1", "upper case"},
		{"resources", "CUSTOM_GOLD=1", "needs a name"},
		{"trait:CUSTOM_RAID", "yes", `"required" or "forbidden"`},
		{"trait:CUSTOM_RAID", "Required", `"required" or "forbidden"`},
		{"trait:custom-raid", "required", "upper case"},
		{"trait:", "required", "upper case"},
		{"trait", "CUSTOM_RAID", "needs a name"},
		{"resources1:CUSTOM_GOLD", "1", "numbered request groups"},
		{"trait_gpu:CUSTOM_GPU", "required", "numbered request groups"},
		{"capabilities:boot_mode", "", "no value"},
		{"capabilities:boot_mode", "  ", "no value"},
		{"capabilities:", "uefi", "no name"},
		{"capabilities:boot_mode", "uefi,bios", "may not contain"},
		{"capabilities:boot_mode", "<or> uefi <or> bios", "operator"},
		{"capabilities:boot_mode", "s== uefi", "operator"},
		{"capabilities", "", "separated by commas"},
		{"capabilities", "supports_uefi,,has_gpu", "no name"},
		{"capabilities", "supports_uefi,", "no name"},
		{"capabilities", ":uefi", "no name"},
		{"capabilities", "boot_mode:", "no value"},
		{"capabilities", "boot_mode:uefi:x", "may not contain"},
		{"capabilities:cpu_arch", "x86:64", "may not contain"},
	}
	for _, tc := range cases {
		_, err := Parse(bareMetal(map[string]string{tc.key: tc.value}))
		if !errors.Is(err, ErrMalformedSpec) {
			t.Errorf("%s=%q: want ErrMalformedSpec, got %v", tc.key, tc.value, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s=%q: error %q does not name the key and say %q", tc.key, tc.value, err, tc.why)
		}
	}
	// Two specs disagreeing on one capability.
	_, err := Parse(bareMetal(map[string]string{"capabilities:boot_mode": "uefi", "capabilities": "boot_mode:bios"}))
	if !errors.Is(err, ErrMalformedSpec) || !strings.Contains(err.Error(), "also required") {
		t.Fatalf("conflicting capabilities: %v", err)
	}
}

// Every malformed spec is reported, in key order, and what could be read
// is kept.
func TestParseReportsAllMalformedInKeyOrder(t *testing.T) {
	r, err := Parse(bareMetal(map[string]string{"trait:CUSTOM_B": "maybe", "trait:CUSTOM_A": "perhaps", "trait:CUSTOM_OK": "required"}))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	a, b := strings.Index(msg, "CUSTOM_A"), strings.Index(msg, "CUSTOM_B")
	if a < 0 || b < 0 || a > b {
		t.Fatalf("error %q does not list both in key order", msg)
	}
	if !slices.Equal(r.Required, []string{"CUSTOM_OK"}) {
		t.Fatalf("required %v", r.Required)
	}
}
