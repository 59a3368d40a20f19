package placement

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits, as in Placement's schemas.
const (
	// MaxAmount bounds every inventory field and allocation amount
	// (Placement's MAX_INT, the largest signed 32-bit integer).
	MaxAmount = math.MaxInt32
	// MaxAllocationRatio bounds allocation_ratio (a single-precision float).
	MaxAllocationRatio = 3.40282e+38
	// MaxNameLen bounds provider names.
	MaxNameLen = 200
	// MaxSymbolLen bounds resource class and trait names.
	MaxSymbolLen = 255
)

const customPrefix = "CUSTOM_"

// standardClasses are the standard resource classes this package accepts
// besides CUSTOM_* ones. Only looked up, never iterated.
var standardClasses = map[string]bool{
	"VCPU": true, "MEMORY_MB": true, "DISK_GB": true, "PCPU": true,
	"PCI_DEVICE": true, "SRIOV_NET_VF": true,
	"NUMA_SOCKET": true, "NUMA_CORE": true, "NUMA_THREAD": true, "NUMA_MEMORY_MB": true,
	"IPV4_ADDRESS": true, "VGPU": true, "VGPU_DISPLAY_HEAD": true, "PGPU": true, "FPGA": true,
	"NET_BW_EGR_KILOBIT_PER_SEC": true, "NET_BW_IGR_KILOBIT_PER_SEC": true,
	"NET_PACKET_RATE_KILOPACKET_PER_SEC":     true,
	"NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC": true,
	"NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC": true,
	"MEM_ENCRYPTION_CONTEXT":                 true,
}

// StandardResourceClasses returns the standard resource classes, sorted.
func StandardResourceClasses() []string {
	out := make([]string, 0, len(standardClasses))
	for rc := range standardClasses {
		out = append(out, rc)
	}
	slices.Sort(out)
	return out
}

// symbolChars reports whether s is non-empty and made of A-Z, 0-9 and _.
func symbolChars(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// ValidateResourceClass returns nil if rc is a standard resource class or a
// custom one (CUSTOM_ followed by A-Z, 0-9 or _).
func ValidateResourceClass(rc string) error {
	if standardClasses[rc] {
		return nil
	}
	if strings.HasPrefix(rc, customPrefix) && len(rc) <= MaxSymbolLen && symbolChars(rc[len(customPrefix):]) {
		return nil
	}
	return invalidf("invalid resource class %q: use a standard class (VCPU, MEMORY_MB, DISK_GB, ...) "+
		"or a custom one of the form CUSTOM_[A-Z0-9_]+", rc)
}

// ValidateTrait returns nil if t is a well-formed trait name: an upper-case
// letter followed by one or more of A-Z, 0-9 and _ (standard traits such as
// HW_CPU_X86_AVX2, or CUSTOM_* ones).
func ValidateTrait(t string) error {
	if len(t) >= 2 && len(t) <= MaxSymbolLen && t[0] >= 'A' && t[0] <= 'Z' && symbolChars(t[1:]) &&
		t != customPrefix[:len(customPrefix)-1] && t != customPrefix {
		return nil
	}
	return invalidf("invalid trait %q: traits look like HW_CPU_X86_AVX2 or CUSTOM_[A-Z0-9_]+", t)
}

// NormalizeUUID returns s in canonical form (lower-case, 8-4-4-4-12) if it
// is a UUID written with or without dashes, in either case.
func NormalizeUUID(s string) (string, bool) {
	var hex [32]byte
	n := 0
	switch len(s) {
	case 36:
		if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
			return "", false
		}
	case 32:
	default:
		return "", false
	}
	canonical := len(s) == 36
	for i := 0; i < len(s); i++ {
		c := s[i]
		if len(s) == 36 && (i == 8 || i == 13 || i == 18 || i == 23) {
			continue
		}
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		case c >= 'A' && c <= 'F':
			c += 'a' - 'A'
			canonical = false
		default:
			return "", false
		}
		hex[n] = c
		n++
	}
	if canonical {
		return s, true
	}
	h := string(hex[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32], true
}

func validName(name string) error {
	if name == "" || len(name) > MaxNameLen || !utf8.ValidString(name) {
		return invalidf("invalid resource provider name %q: it must be 1 to %d bytes of UTF-8", name, MaxNameLen)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return invalidf("invalid resource provider name %q: control characters are not allowed", name)
		}
	}
	return nil
}

// ParseResources parses Placement's resources query parameter, such as
// "VCPU:1,MEMORY_MB:512,DISK_GB:10". Every class must be valid and appear
// once, and every amount must be an integer from 1 to MaxAmount.
func ParseResources(s string) (map[string]int64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, invalidf("badly formed resources parameter: expected RESOURCE_CLASS:AMOUNT[,...] " +
			"such as VCPU:2,MEMORY_MB:1024, got an empty string")
	}
	out := make(map[string]int64)
	for _, part := range strings.Split(s, ",") {
		rc, amount, ok := strings.Cut(part, ":")
		rc, amount = strings.TrimSpace(rc), strings.TrimSpace(amount)
		if !ok || rc == "" || strings.Contains(amount, ":") {
			return nil, invalidf("badly formed resources parameter: expected RESOURCE_CLASS:AMOUNT, got %q", part)
		}
		if err := ValidateResourceClass(rc); err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(amount, 10, 64)
		if err != nil || n < 1 || n > MaxAmount {
			return nil, invalidf("requested resource %s expects an integer amount from 1 to %d, got %q",
				rc, MaxAmount, amount)
		}
		if _, dup := out[rc]; dup {
			return nil, invalidf("resource class %s appears more than once in the resources parameter", rc)
		}
		out[rc] = n
	}
	return out, nil
}

// ParseRequired parses Placement's required query parameter, such as
// "HW_CPU_X86_AVX2,!CUSTOM_MAINTENANCE": traits prefixed with "!" are
// forbidden. Both results are sorted and free of duplicates; a trait may not
// be both required and forbidden.
func ParseRequired(s string) (required, forbidden []string, err error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil, invalidf("badly formed required parameter: expected TRAIT[,!TRAIT...] " +
			"such as HW_CPU_X86_VMX,!CUSTOM_MAGIC, got an empty string")
	}
	return splitTraits(strings.Split(s, ","))
}

// splitTraits validates trait terms ("T" or "!T") and splits them.
func splitTraits(terms []string) (required, forbidden []string, err error) {
	for _, term := range terms {
		t := strings.TrimSpace(term)
		neg := strings.HasPrefix(t, "!")
		if neg {
			t = t[1:]
		}
		if err := ValidateTrait(t); err != nil {
			return nil, nil, err
		}
		if neg {
			forbidden = append(forbidden, t)
		} else {
			required = append(required, t)
		}
	}
	required, forbidden = sortedSet(required), sortedSet(forbidden)
	for _, t := range required {
		if _, found := slices.BinarySearch(forbidden, t); found {
			return nil, nil, invalidf("trait %s is both required and forbidden", t)
		}
	}
	return required, forbidden, nil
}

// ParseMemberOf parses one member_of query parameter: a single aggregate
// UUID, or "in:" followed by comma-separated UUIDs (any of them). The result
// is sorted, canonical and free of duplicates.
func ParseMemberOf(s string) ([]string, error) {
	list, hasIn := strings.CutPrefix(s, "in:")
	if !hasIn && strings.Contains(s, ",") {
		return nil, invalidf("multiple values for member_of must be prefixed with 'in:', got %q", s)
	}
	return normalizeUUIDs(strings.Split(list, ","), "aggregate")
}

// normalizeUUIDs canonicalises, sorts and de-duplicates UUIDs.
func normalizeUUIDs(in []string, what string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, u := range in {
		c, ok := NormalizeUUID(strings.TrimSpace(u))
		if !ok {
			return nil, invalidf("invalid %s UUID %q", what, u)
		}
		out = append(out, c)
	}
	return sortedSet(out), nil
}

// sortedSet sorts s in place and removes duplicates; nil for an empty set.
func sortedSet(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	slices.Sort(s)
	return slices.Compact(s)
}
