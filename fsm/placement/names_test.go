package placement

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestParseResources(t *testing.T) {
	got, err := ParseResources("VCPU:1, MEMORY_MB:512,CUSTOM_GOLD:1")
	if err != nil || !maps.Equal(got, map[string]int64{"VCPU": 1, "MEMORY_MB": 512, "CUSTOM_GOLD": 1}) {
		t.Fatalf("got %v %v", got, err)
	}
	for _, bad := range []string{
		"", " ", "VCPU", "VCPU:", "VCPU:0", "VCPU:-1", "VCPU:x", "VCPU:1:2", ":1",
		"VCPU:1,VCPU:2", "GOLD:1", "custom_gold:1", "VCPU:1,", "VCPU:2147483648",
	} {
		if _, err := ParseResources(bad); err == nil || HTTPStatus(err) != 400 {
			t.Errorf("ParseResources(%q) = %v", bad, err)
		}
	}
}

func TestParseRequired(t *testing.T) {
	req, forb, err := ParseRequired("HW_CPU_X86_AVX2,!CUSTOM_MAINT, CUSTOM_RAID,HW_CPU_X86_AVX2")
	if err != nil || !slices.Equal(req, []string{"CUSTOM_RAID", "HW_CPU_X86_AVX2"}) ||
		!slices.Equal(forb, []string{"CUSTOM_MAINT"}) {
		t.Fatalf("got %v %v %v", req, forb, err)
	}
	for _, bad := range []string{"", "a", "!", "!!CUSTOM_A", "CUSTOM_A,", "CUSTOM_A,!CUSTOM_A", "CUSTOM_", "X"} {
		if _, _, err := ParseRequired(bad); err == nil {
			t.Errorf("ParseRequired(%q) accepted", bad)
		}
	}
}

func TestParseMemberOf(t *testing.T) {
	got, err := ParseMemberOf("in:" + strings.ToUpper(agg(2)) + "," + agg(1))
	if err != nil || !slices.Equal(got, []string{agg(1), agg(2)}) {
		t.Fatalf("got %v %v", got, err)
	}
	if got, err := ParseMemberOf(agg(3)); err != nil || len(got) != 1 {
		t.Fatalf("single: %v %v", got, err)
	}
	for _, bad := range []string{"", "in:", agg(1) + "," + agg(2), "in:x"} {
		if _, err := ParseMemberOf(bad); err == nil {
			t.Errorf("ParseMemberOf(%q) accepted", bad)
		}
	}
}

func TestNamesAndUUIDs(t *testing.T) {
	for _, rc := range StandardResourceClasses() {
		if ValidateResourceClass(rc) != nil {
			t.Errorf("standard class %s rejected", rc)
		}
	}
	if !slices.IsSorted(StandardResourceClasses()) {
		t.Error("standard classes not sorted")
	}
	for _, rc := range []string{"CUSTOM_GOLD", "CUSTOM_BAREMETAL_LARGE_2"} {
		if ValidateResourceClass(rc) != nil {
			t.Errorf("%s rejected", rc)
		}
	}
	for _, rc := range []string{"", "CUSTOM_", "CUSTOM_gold", "GOLD", "CUSTOM_A-B", "CUSTOM_" + strings.Repeat("A", 250)} {
		if ValidateResourceClass(rc) == nil {
			t.Errorf("%q accepted", rc)
		}
	}
	for _, u := range []string{"6F9619FF8B86D011B42D00C04FC964FF", "6f9619ff-8b86-d011-b42d-00c04fc964ff"} {
		if c, ok := NormalizeUUID(u); !ok || c != "6f9619ff-8b86-d011-b42d-00c04fc964ff" {
			t.Errorf("NormalizeUUID(%q) = %q %v", u, c, ok)
		}
	}
	for _, u := range []string{"", "6f9619ff-8b86-d011-b42d-00c04fc964f", "6f9619ff8b86-d011-b42d-00c04fc964ff0", "g6f9619ff8b86d011b42d00c04fc964f"} {
		if _, ok := NormalizeUUID(u); ok {
			t.Errorf("NormalizeUUID(%q) accepted", u)
		}
	}
}

func formatResources(m map[string]int64) string {
	var parts []string
	for _, rc := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s:%d", rc, m[rc]))
	}
	return strings.Join(parts, ",")
}

func FuzzParseResources(f *testing.F) {
	for _, s := range []string{"VCPU:1,MEMORY_MB:512,DISK_GB:1", "CUSTOM_GOLD:1", "VCPU:0", " VCPU : 2 ", "a:b:c", ",", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseResources(s)
		if err != nil {
			if HTTPStatus(err) != 400 {
				t.Fatalf("error %v is not a 400", err)
			}
			return
		}
		for rc, n := range m {
			if ValidateResourceClass(rc) != nil || n < 1 || n > MaxAmount {
				t.Fatalf("accepted %s:%d from %q", rc, n, s)
			}
		}
		again, err := ParseResources(formatResources(m))
		if err != nil || !maps.Equal(again, m) {
			t.Fatalf("round trip of %q: %v %v", s, again, err)
		}
	})
}

func FuzzParseRequired(f *testing.F) {
	for _, s := range []string{"HW_CPU_X86_AVX2,!CUSTOM_MAINT", "CUSTOM_A", "!CUSTOM_A,CUSTOM_A", "!", " ,", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		req, forb, err := ParseRequired(s)
		if err != nil {
			if HTTPStatus(err) != 400 {
				t.Fatalf("error %v is not a 400", err)
			}
			return
		}
		if len(req)+len(forb) == 0 || !slices.IsSorted(req) || !slices.IsSorted(forb) {
			t.Fatalf("bad result for %q: %v %v", s, req, forb)
		}
		terms := slices.Clone(req)
		for _, f := range forb {
			terms = append(terms, "!"+f)
		}
		r2, f2, err := ParseRequired(strings.Join(terms, ","))
		if err != nil || !slices.Equal(r2, req) || !slices.Equal(f2, forb) {
			t.Fatalf("round trip of %q: %v %v %v", s, r2, f2, err)
		}
	})
}
