package nova

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
)

// Nova's formats of the strings it keeps (nova/api/validation), with its
// words when it refuses one. Nova checks what it can read before it
// checks anything against the state, so these run before any proposal.

// maxNameLen bounds Nova's names (servers, flavors, key pairs, zones).
const maxNameLen = 255

// maxTags and maxTagLen bound a server's tags, as Nova (2.52).
const (
	maxTags   = 50
	maxTagLen = 60
)

const invalidName = "An invalid 'name' value was provided. The name must be: printable characters. Can not start or end with whitespace."

// checkName holds s to Nova's name type: 1 to 255 printable characters,
// the first and last no space.
func checkName(field, s string) error {
	switch n := utf8.RuneCountInString(s); {
	case n == 0:
		return invalidInput(field, s, "'' is too short")
	case n > maxNameLen:
		return invalidInput(field, s, fmt.Sprintf("'%s' is too long", shown(s)))
	case !utf8.ValidString(s):
		return core.BadRequest("%s", invalidName)
	}
	for _, r := range s {
		if !fsm.IsPrintable(r) {
			return core.BadRequest("%s", invalidName)
		}
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	if unicode.Is(unicode.Zs, first) || unicode.Is(unicode.Zs, last) {
		return core.BadRequest("%s", invalidName)
	}
	return nil
}

// checkDescription holds s to Nova's description type: at most max
// printable characters (spaces anywhere).
func checkDescription(field, s string, max int) error {
	if utf8.RuneCountInString(s) > max {
		return invalidInput(field, s, fmt.Sprintf("'%s' is too long", shown(s)))
	}
	if !utf8.ValidString(s) {
		return invalidInput(field, s, "the description is not UTF-8 text")
	}
	for _, r := range s {
		if !fsm.IsPrintable(r) {
			return invalidInput(field, s, fmt.Sprintf("'%s' does not match printable characters: %U is not one", shown(s), r))
		}
	}
	return nil
}

// checkMetadataKey holds a metadata key (or an extra spec's) to Nova's
// pattern: 1 to 255 letters, digits, '-', '_', ':', '.' and spaces.
func checkMetadataKey(field, k string) error {
	ok := k != "" && len(k) <= fsm.MaxMetadataKeyLen
	for i := 0; ok && i < len(k); i++ {
		c := k[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '_' || c == ':' || c == '.' || c == ' '
	}
	if !ok {
		return invalidInput(field, k, fmt.Sprintf("Additional properties are not allowed ('%s' was unexpected)", shown(k)))
	}
	return nil
}

// checkMetadataValue holds a metadata value (or an extra spec's) to
// Nova's bound, 255 characters, and to corral's: text without control
// characters but tab and line breaks, and without bidirectional controls.
func checkMetadataValue(key, v string) error {
	if utf8.RuneCountInString(v) > fsm.MaxMetadataValueLen {
		return invalidInput(key, v, fmt.Sprintf("'%s' is too long", shown(v)))
	}
	if !utf8.ValidString(v) {
		return invalidInput(key, v, "the value is not UTF-8 text")
	}
	for _, r := range v {
		if !fsm.IsStorableRune(r, true) {
			return invalidInput(key, v, fmt.Sprintf("%U is a control character, which a value may not hold", r))
		}
	}
	return nil
}

// checkMetadata holds a server's metadata keys and values to Nova's
// rules (the number of items is the metadata_items quota's, which Apply
// checks: fsm/quota_check.go). Keys are checked in sorted order: the same error for
// the same body.
func checkMetadata(meta map[string]string) error {
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := checkMetadataKey("metadata", k); err != nil {
			return err
		}
		if err := checkMetadataValue(k, meta[k]); err != nil {
			return err
		}
	}
	return nil
}

// checkDiskConfig takes Nova's OS-DCF:diskConfig, AUTO or MANUAL (its
// Ironic driver partitions as the image says either way).
func checkDiskConfig(v *string) error {
	if v != nil && *v != "AUTO" && *v != "MANUAL" {
		return invalidInput("OS-DCF:diskConfig", *v, fmt.Sprintf("'%s' is not one of ['AUTO', 'MANUAL']", shown(*v)))
	}
	return nil
}

// checkAccessIPs holds accessIPv4 and accessIPv6 to their formats and
// rewrites each into the form Nova keeps and shows (canonicalIP).
func checkAccessIPs(v4, v6 *string) error {
	if v4 != nil {
		a, err := netip.ParseAddr(*v4)
		if err != nil || !a.Is4() {
			return invalidInput("accessIPv4", *v4, fmt.Sprintf("'%s' is not a 'ipv4'", shown(*v4)))
		}
		*v4 = canonicalIP(a)
	}
	if v6 != nil {
		a, err := netip.ParseAddr(*v6)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return invalidInput("accessIPv6", *v6, fmt.Sprintf("'%s' is not a 'ipv6'", shown(*v6)))
		}
		*v6 = canonicalIP(a)
	}
	return nil
}

// canonicalIP is an address as Nova keeps an access address: its
// instance fields hold a netaddr.IPAddress, shown in the compact form of
// RFC 5952 as inet_ntop writes it ("0:0:0:0:0:babe:220.12.22.2" is
// "::babe:dc0c:1602"), which is Go's but for an IPv4-compatible address
// (96 zero bits, then a word that is not zero), written "::1.2.3.4".
func canonicalIP(a netip.Addr) string {
	if a.Is6() && !a.Is4In6() {
		b := a.As16()
		if [12]byte(b[:12]) == [12]byte{} && b[12]|b[13] != 0 {
			return "::" + netip.AddrFrom4([4]byte(b[12:])).String()
		}
	}
	return a.String()
}

// isIPAddress reports whether s is an IPv4 or IPv6 address (Nova's
// ip_address type).
func isIPAddress(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Zone() == ""
}

// checkTag holds a tag to Nova's tag type: 1 to 60 characters, no ','
// and no '/'; text.
func checkTag(field, tag string) error {
	if n := utf8.RuneCountInString(tag); n == 0 || n > maxTagLen {
		return invalidInput(field, tag, fmt.Sprintf("a tag is 1 to %d characters long", maxTagLen))
	}
	if strings.ContainsAny(tag, ",/") {
		return invalidInput(field, tag, fmt.Sprintf("'%s' does not match '^[^,/]*$'", shown(tag)))
	}
	if err := fsm.CheckText(field, tag, maxTagLen, false); err != nil {
		return invalidInput(field, tag, "a tag is text without control characters")
	}
	return nil
}
