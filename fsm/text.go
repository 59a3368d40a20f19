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

// Bounds of what one server or flavor holds.
const (
	// MaxMetadataItems bounds a server's metadata, whatever the metadata
	// quota of its project (Nova's default quota is 128 items, which the
	// compute API enforces).
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
