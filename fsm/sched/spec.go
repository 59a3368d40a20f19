package sched

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Flavor is the part of a Nova flavor that scheduling reads.
type Flavor struct {
	Name       string
	VCPUs      int
	RAM        int // MiB
	Disk       int // GiB
	Ephemeral  int // GiB
	Swap       int // MiB
	ExtraSpecs map[string]string
}

// Request is what a flavor asks of a host or an Ironic node.
type Request struct {
	// Flavor is the flavor's name, for messages.
	Flavor string
	// Resources maps resource class → amount: VCPU, MEMORY_MB and DISK_GB
	// from the flavor's fields, overridden by resources:<CLASS>=<N>
	// (0 removes a class).
	Resources map[string]int64
	// Required and Forbidden are the traits of trait:<NAME>=required and
	// =forbidden, sorted.
	Required, Forbidden []string
	// Capabilities are the Ironic node capabilities the flavor needs,
	// matched by exact value.
	Capabilities map[string]string
}

// capabilitiesKey is the key of the comma form of capabilities.
const capabilitiesKey = "capabilities"

// maxAmount is Placement's largest amount (2^31-1).
const maxAmount = 1<<31 - 1

// Parse reads a flavor into a Request. It is the one parser of Nova flavor
// extra specs in corral:
//
//	resources:<CLASS>=<N>          N from 0 to 2^31-1; 0 removes the class
//	trait:<NAME>=required          the host or node must have the trait
//	trait:<NAME>=forbidden         it must not have it
//	capabilities:<key>=<value>     the Ironic node must have key:value
//	capabilities=<key>[:<value>],...  the same, several at once; a bare
//	                                  key means <key>:true
//
// Class and trait names are upper case letters, digits and '_'. Other
// namespaces (hw:, quota:, ...) are not scheduling's and are ignored.
// Malformed specs — a bad amount or name, a trait value other than
// required/forbidden, an empty capability, a capability value with a Nova
// operator (corral matches exact values), a capability given twice with
// different values, numbered request groups — make Parse return an error
// wrapping ErrMalformedSpec that lists them all, in key order; the Request
// then holds what could be read.
func Parse(f Flavor) (Request, error) {
	r := Request{Flavor: f.Name, Resources: map[string]int64{}, Capabilities: map[string]string{}}
	if f.VCPUs > 0 {
		r.Resources["VCPU"] = int64(f.VCPUs)
	}
	if f.RAM > 0 {
		r.Resources["MEMORY_MB"] = int64(f.RAM)
	}
	if disk := int64(f.Disk) + int64(f.Ephemeral) + (int64(f.Swap)+1023)/1024; disk > 0 {
		r.Resources["DISK_GB"] = disk
	}
	var bad []string
	fail := func(k, v, why string) { bad = append(bad, fmt.Sprintf("%q=%q: %s", k, v, why)) }
	capFrom := map[string]string{} // capability → the spec that set it
	setCap := func(k, v, key, value string) {
		if old, ok := r.Capabilities[k]; ok && old != v {
			fail(key, value, fmt.Sprintf("capability %s is also required as %q by %s", k, old, capFrom[k]))
			return
		}
		r.Capabilities[k], capFrom[k] = v, key
	}
	for _, k := range slices.Sorted(maps.Keys(f.ExtraSpecs)) {
		v := f.ExtraSpecs[k]
		ns, name, scoped := strings.Cut(k, ":")
		switch {
		case ns == "resources" && scoped:
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			switch {
			case !validName(name):
				fail(k, v, "the resource class must be upper case letters, digits and '_', such as CUSTOM_BAREMETAL_GOLD")
			case err != nil || n < 0 || n > maxAmount:
				fail(k, v, fmt.Sprintf("the amount must be a whole number from 0 to %d", maxAmount))
			case n == 0:
				delete(r.Resources, name)
			default:
				r.Resources[name] = n
			}
		case ns == "trait" && scoped:
			switch {
			case !validName(name):
				fail(k, v, "the trait must be upper case letters, digits and '_', such as CUSTOM_RAID or HW_CPU_X86_AVX2")
			case v == "required":
				r.Required = append(r.Required, name)
			case v == "forbidden":
				r.Forbidden = append(r.Forbidden, name)
			default:
				fail(k, v, `a trait is "required" or "forbidden"`)
			}
		case ns == "capabilities" && scoped:
			if why := badCapability(name, v); why != "" {
				fail(k, v, why)
				continue
			}
			setCap(name, strings.TrimSpace(v), k, v)
		case k == capabilitiesKey:
			if strings.TrimSpace(v) == "" {
				fail(k, v, "list capabilities as key or key:value separated by commas, such as supports_uefi,boot_mode:uefi")
				continue
			}
			for item := range strings.SplitSeq(v, ",") {
				ck, cv, hasValue := strings.Cut(strings.TrimSpace(item), ":")
				ck, cv = strings.TrimSpace(ck), strings.TrimSpace(cv)
				if !hasValue {
					cv = "true"
				}
				if why := badCapability(ck, cv); why != "" {
					fail(k, v, fmt.Sprintf("entry %q: %s", strings.TrimSpace(item), why))
					continue
				}
				setCap(ck, cv, k, v)
			}
		case numberedGroup(ns, scoped):
			fail(k, v, "numbered request groups are not supported: use resources:, trait: and capabilities: without a number")
		case (ns == "resources" || ns == "trait") && !scoped:
			fail(k, v, fmt.Sprintf("the key needs a name: %s:<NAME>", ns))
		}
	}
	if len(bad) > 0 {
		return r, fmt.Errorf("%w of flavor %s: %s: fix them with `openstack flavor set`", ErrMalformedSpec, f.Name, strings.Join(bad, "; "))
	}
	return r, nil
}

// validName reports whether s is a Placement resource class or trait name.
func validName(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// novaOperators are the first words of Nova's extra spec operators.
var novaOperators = []string{"=", "==", "!=", ">=", "<=", "s==", "s!=", "s<", "s<=", "s>", "s>=", "<in>", "<all-in>", "<or>"}

// badCapability says why key:value cannot be a capability, or "".
func badCapability(key, value string) string {
	switch {
	case key == "":
		return "the capability has no name"
	case strings.ContainsAny(key, ":,"):
		return "a capability name may not contain ':' or ','"
	case strings.TrimSpace(value) == "":
		return "the capability has no value"
	case strings.ContainsAny(value, ":,"):
		return "a capability value may not contain ':' or ',' (Ironic's capabilities string cannot hold them)"
	}
	if op, _, _ := strings.Cut(strings.TrimSpace(value), " "); slices.Contains(novaOperators, op) {
		return fmt.Sprintf("operator %q is not supported: corral matches a capability's exact value", op)
	}
	return ""
}

// numberedGroup reports whether ns names one of Nova's granular request
// groups (resources1:, trait_gpu:, ...).
func numberedGroup(ns string, scoped bool) bool {
	if !scoped {
		return false
	}
	for _, p := range []string{"resources", "trait"} {
		if rest, ok := strings.CutPrefix(ns, p); ok && rest != "" && (rest[0] == '_' || rest[0] >= '0' && rest[0] <= '9') {
			return true
		}
	}
	return false
}

// Traits returns the traits in Placement's query form: the required ones,
// then the forbidden ones prefixed with "!".
func (r Request) Traits() []string {
	out := slices.Clone(r.Required)
	for _, t := range r.Forbidden {
		out = append(out, "!"+t)
	}
	return out
}

// NodeClass returns the custom resource class an Ironic node must have for
// the request: its one CUSTOM_ class, or "" when it asks for none or for
// several (a node has one class).
func (r Request) NodeClass() string {
	class := ""
	for _, rc := range slices.Sorted(maps.Keys(r.Resources)) {
		if strings.HasPrefix(rc, "CUSTOM_") {
			if class != "" {
				return ""
			}
			class = rc
		}
	}
	return class
}
