package fsm

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// The text every peer stores. The API holds what users send to Nova's
// rules (api/nova), which are stricter; Apply refuses, whatever path a
// command took, the text no field may hold: longer than its bound, with
// a control character (tab, line feed and carriage return only in the
// fields that may span lines) or a bidirectional control, which shows
// the text around it in another order than it is stored.
//
// Apply holds a command to these bounds only when it carries
// Meta.Bounded, which the leader sets once every live peer advertises
// that it applies them. An entry of an older leader was applied without
// them (a server named with a NUL byte, 20,000 extra specs) and replays
// so, on every peer and from every snapshot: refusing it now would make
// a replica that replays the log differ from one that applied it then.

// Bounds of what one server or flavor holds.
const (
	// MaxMetadataItems bounds a server's metadata, whatever the metadata
	// quota of its project: Nova's default quota, 128 items, is what the
	// compute API enforces, and a project's quota may be raised above it
	// without a change of what Apply accepts.
	MaxMetadataItems = 1024
	// MaxMetadataKeyLen and MaxMetadataValueLen bound one item, as Nova.
	MaxMetadataKeyLen   = 255
	MaxMetadataValueLen = 255
	// MaxExtraSpecs bounds a flavor's extra specs (Nova has no bound but
	// its request size; no flavor needs so many).
	MaxExtraSpecs = 256
	// MaxServerNetworks bounds the networks a server attaches to: more
	// than any node has ports.
	MaxServerNetworks = 64
	// MaxImageRefLen bounds an image reference: a Glance id, or the URL
	// Ironic downloads the image from.
	MaxImageRefLen = 2048
	// maxNetworkFieldLen bounds a requested network's uuid, port and
	// fixed address.
	maxNetworkFieldLen = 255
	// maxReasonLen bounds the reasons of a lock and a drain, as Nova.
	maxReasonLen = 255
)

// MaxRxTxFactor is the largest rxtx_factor, as Nova (the largest single
// precision float its database keeps).
const MaxRxTxFactor = 3.40282e+38

// IsPrintable reports whether r is a printable character as Nova's name
// and description formats define one: a letter, mark, number,
// punctuation, symbol or space separator; not a control or format
// character (bidirectional controls, zero-width characters among them),
// a surrogate, a private-use or unassigned code point, nor a line or
// paragraph separator.
func IsPrintable(r rune) bool {
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Zs)
}

// IsBidiControl reports whether r is one of Unicode's explicit
// bidirectional embeddings, overrides or isolates (U+202A to U+202E,
// U+2066 to U+2069): shown, they reorder the text that follows them.
func IsBidiControl(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// IsStorableRune reports whether r may be stored in a text field: no
// control character but, in a field of several lines, tab, line feed and
// carriage return; no bidirectional control.
func IsStorableRune(r rune, multiline bool) bool {
	if unicode.IsControl(r) {
		return multiline && (r == '\t' || r == '\n' || r == '\r')
	}
	return !IsBidiControl(r)
}

// CheckText refuses a field's text that is longer than max characters or
// holds a character IsStorableRune refuses. Errors wrap ErrInvalid and
// name the field and the first such character (the same on every peer).
func CheckText(field, s string, max int, multiline bool) error {
	if n := utf8.RuneCountInString(s); n > max {
		return fmt.Errorf("%w: %s is %d characters long: at most %d are allowed", ErrInvalid, field, n, max)
	}
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return fmt.Errorf("%w: %s is not UTF-8 text", ErrInvalid, field)
			}
			continue // U+FFFD itself is a character
		}
		if !IsStorableRune(r, multiline) {
			return fmt.Errorf("%w: %s holds the character %U at byte %d, which no text field may hold", ErrInvalid, field, r, i)
		}
	}
	return nil
}

// CheckName refuses what is not Nova's name: 1 to 255 printable
// characters (IsPrintable), the first and the last no space.
func CheckName(field, s string) error {
	if err := CheckText(field, s, maxServerNameLen, false); err != nil {
		return err
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	switch {
	case s == "":
		return fmt.Errorf("%w: %s is empty", ErrInvalid, field)
	case unicode.Is(unicode.Zs, first) || unicode.Is(unicode.Zs, last):
		return fmt.Errorf("%w: %s %q starts or ends with a space", ErrInvalid, field, s)
	}
	for i, r := range s {
		if !IsPrintable(r) {
			return fmt.Errorf("%w: %s holds %U at byte %d, which is no printable character", ErrInvalid, field, r, i)
		}
	}
	return nil
}

// checkServerText refuses a server's name, image reference, metadata and
// networks beyond the bounds any server may hold, whatever command
// brought them (a boot, a batch of boots, an adoption). Without bounded
// it checks what an entry without Meta.Bounded was held to: a name of 1
// to 255 bytes. A name of a server corral made or renamed is Nova's name
// (CheckName); an adopted server keeps the name it has, as long as it is
// text (Nova's old API took any).
func checkServerText(name, imageRef string, meta map[string]string, nets []Network, bounded bool) error {
	if name == "" || !bounded && len(name) > maxServerNameLen {
		return fmt.Errorf("%w: server name must be 1 to %d characters", ErrInvalid, maxServerNameLen)
	}
	if !bounded {
		return nil
	}
	if err := CheckText("server name", name, maxServerNameLen, false); err != nil {
		return err
	}
	if err := CheckText("imageRef", imageRef, MaxImageRefLen, false); err != nil {
		return err
	}
	if err := checkMetadataText(meta); err != nil {
		return err
	}
	if len(nets) > MaxServerNetworks {
		return fmt.Errorf("%w: %d networks: a server attaches to at most %d", ErrInvalid, len(nets), MaxServerNetworks)
	}
	for i, n := range nets {
		for _, f := range []struct{ field, s string }{{"uuid", n.UUID}, {"port", n.Port}, {"fixed_ip", n.FixedIP}} {
			if err := CheckText(fmt.Sprintf("network %d's %s", i, f.field), f.s, maxNetworkFieldLen, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkFlavorText refuses a flavor's id, name and description that hold
// a character CheckText refuses.
func checkFlavorText(f Flavor) error {
	for _, t := range []struct {
		field, s  string
		max       int
		multiline bool
	}{{"flavor ID", f.ID, MaxFlavorIDLen, false}, {"flavor name", f.Name, MaxFlavorNameLen, false},
		{"flavor description", f.Description, MaxFlavorDescriptionLen, true}} {
		if err := CheckText(t.field, t.s, t.max, t.multiline); err != nil {
			return err
		}
	}
	return nil
}

// checkMetadataText refuses more than MaxMetadataItems items, keys of more
// than MaxMetadataKeyLen characters or empty, values of more than
// MaxMetadataValueLen, and either with a character CheckText refuses (a
// key is one line). Keys are checked in sorted order.
func checkMetadataText(meta map[string]string) error {
	if len(meta) > MaxMetadataItems {
		return fmt.Errorf("%w: %d metadata items: a server has at most %d", ErrInvalid, len(meta), MaxMetadataItems)
	}
	for _, k := range sortedKeys(meta) {
		if k == "" {
			return fmt.Errorf("%w: a metadata key is empty", ErrInvalid)
		}
		if err := CheckText("metadata key", k, MaxMetadataKeyLen, false); err != nil {
			return err
		}
		if err := CheckText(fmt.Sprintf("metadata %q", k), meta[k], MaxMetadataValueLen, true); err != nil {
			return err
		}
	}
	return nil
}

// checkReason refuses a lock's or a drain's reason beyond its bound.
func checkReason(field, reason string) error {
	return CheckText(field, reason, maxReasonLen, true)
}
