package api_test

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/fsm"
)

// What Nova would refuse to store, written again here from Nova's schemas
// (nova/api/validation/parameter_types.py), apart from the API's own
// checks, to judge what the fuzzer's requests left in the state.

// novaName: Nova's name type (1 to 255 printable characters, no space
// at either end).
func novaName(s string) bool {
	n := utf8.RuneCountInString(s)
	if n == 0 || n > 255 || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Zs) {
			return false
		}
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	return !unicode.Is(unicode.Zs, first) && !unicode.Is(unicode.Zs, last)
}

// novaDescription: printable, at most max characters.
func novaDescription(s string, max int) bool {
	if utf8.RuneCountInString(s) > max || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Zs) {
			return false
		}
	}
	return true
}

// metadataKey: Nova's ^[a-zA-Z0-9-_:. ]{1,255}$.
func metadataKey(k string) bool {
	if k == "" || len(k) > 255 {
		return false
	}
	return strings.Trim(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_:. ") == ""
}

// metadataValue: at most 255 characters, and (corral's rule) text
// without control characters but tab and line breaks, and without
// bidirectional controls.
func metadataValue(v string) bool {
	if utf8.RuneCountInString(v) > 255 || !utf8.ValidString(v) {
		return false
	}
	for _, r := range v {
		if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {
			return false
		}
	}
	return true
}

// flavorID: Nova's pattern of an id given as a string, a number's
// literal, or the UUID Nova makes.
func flavorID(id string) bool {
	if uuid.Validate(id) == nil {
		return true
	}
	if id == "" || len(id) > 255 || id[0] == ' ' || id[len(id)-1] == ' ' {
		return false
	}
	return strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789. _-+") == ""
}

// storedProblems lists what the store holds that Nova would refuse.
func storedProblems(st *fsm.Store, users []string) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	replacement := func(what, s string) {
		// The fuzzer sends no U+FFFD: one stored is a surrogate or bytes
		// that were no UTF-8, decoded into it.
		if strings.ContainsRune(s, utf8.RuneError) {
			bad("%s %q holds U+FFFD, which no request sent", what, s)
		}
	}
	for _, f := range st.Flavors() {
		if !flavorID(f.ID) {
			bad("flavor id %q", f.ID)
		}
		if !novaName(f.Name) {
			bad("flavor %s: name %q", f.ID, f.Name)
		}
		if !novaDescription(f.Description, 65535) {
			bad("flavor %s: description %.80q", f.ID, f.Description)
		}
		if len(f.ExtraSpecs) > fsm.MaxExtraSpecs {
			bad("flavor %s: %d extra specs", f.ID, len(f.ExtraSpecs))
		}
		for k, v := range f.ExtraSpecs {
			if !metadataKey(k) || !metadataValue(v) {
				bad("flavor %s: extra spec %.80q = %.80q", f.ID, k, v)
			}
			replacement("extra spec", v)
		}
		if !(f.RxTxFactor > 0 && f.RxTxFactor <= 3.40282e+38) {
			bad("flavor %s: rxtx_factor %v", f.ID, f.RxTxFactor)
		}
		for _, s := range []string{f.ID, f.Name, f.Description} {
			replacement("flavor "+f.ID, s)
		}
	}
	for _, v := range st.Servers() {
		if !novaName(v.Name) {
			bad("server %s: name %.80q", v.ID, v.Name)
		}
		if len(v.Metadata) > 128 {
			bad("server %s: %d metadata items", v.ID, len(v.Metadata))
		}
		for k, val := range v.Metadata {
			if !metadataKey(k) || !metadataValue(val) {
				bad("server %s: metadata %.80q = %.80q", v.ID, k, val)
			}
			replacement("metadata", val)
		}
		if len(v.ImageRef) > fsm.MaxImageRefLen || strings.IndexFunc(v.ImageRef, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			bad("server %s: imageRef %.80q", v.ID, v.ImageRef)
		}
		if len(v.Networks) > fsm.MaxServerNetworks {
			bad("server %s: %d networks", v.ID, len(v.Networks))
		}
		for _, n := range v.Networks {
			if n.Port != "" && uuid.Validate(n.Port) != nil || n.Port == "" && uuid.Validate(n.UUID) != nil {
				bad("server %s: network %+v", v.ID, n)
			}
		}
		if v.KeyName != "" && !novaName(v.KeyName) {
			bad("server %s: key_name %q", v.ID, v.KeyName)
		}
		if _, err := st.KeyPair(v.User(), v.KeyName); v.KeyName != "" && err != nil {
			// The fuzzer deletes none of the key pairs a boot names.
			bad("server %s: key_name %q names no key pair of %s", v.ID, v.KeyName, v.User())
		}
		if !metadataValue(v.LockedReason) {
			bad("server %s: locked_reason %q", v.ID, v.LockedReason)
		}
		replacement("server "+v.ID, v.Name+v.ImageRef+v.LockedReason)
	}
	for _, u := range users {
		for _, k := range st.KeyPairs(u) {
			if !novaName(k.Name) || strings.Trim(k.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_- .@") != "" {
				bad("key pair of %s: name %q", u, k.Name)
			}
		}
	}
	return out
}

// checkStored fails on what the leader's store holds that Nova refuses.
func (h *hostile) checkStored() {
	h.t.Helper()
	for _, p := range storedProblems(h.leader(), fuzzUsers) {
		h.fail("stored: %s", p)
	}
}
