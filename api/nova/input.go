package nova

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/corral-dev/corral/api/core"
)

// Nova's JSON schemas (nova/api/validation/parameter_types.py) take some
// scalars in more than one JSON type: an integer or a string of digits,
// a boolean or one of its words, a number or a string of one. The request
// types of this package (requests.go) keep those fields raw, and these
// read them as Nova does, or answer Nova's 400.

// invalidInput is Nova's 400 for a field that its schema refuses.
func invalidInput(field string, value any, reason string) error {
	return core.BadRequest("Invalid input for field/attribute %s. Value: %s. %s", field, shown(value), reason)
}

// shown is a value as an error message shows it: control characters
// escaped, and at most 64 characters of it.
func shown(v any) string {
	s := fmt.Sprint(v)
	if raw, ok := v.(json.RawMessage); ok {
		s = string(raw)
	}
	if utf8.RuneCountInString(s) > 64 {
		s = string([]rune(s)[:64]) + "..."
	}
	q := strconv.QuoteToGraphic(s)
	return q[1 : len(q)-1]
}

// isNull reports whether a raw field is absent or null. (A raw field is
// as the decoder cut it: a JSON value without the space around it.)
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// jsonString decodes raw when it is a JSON string. A string of printable
// ASCII without escapes is its bytes (no second pass of the decoder over
// what the request's decode already checked); any other goes through
// json.Unmarshal.
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	if plainASCIIString(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// plainASCIIString reports whether raw is a JSON string of printable
// ASCII without escapes: `"` , the characters, `"`.
func plainASCIIString(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	for _, b := range raw[1 : len(raw)-1] {
		if b < 0x20 || b >= 0x7f || b == '"' || b == '\\' {
			return false
		}
	}
	return true
}

// jsonNumber decodes raw when it is a JSON number, as its literal (which
// is what json.Unmarshal makes of it).
func jsonNumber(raw json.RawMessage) (json.Number, bool) {
	if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return "", false
	}
	if validNumber(raw) {
		return json.Number(raw), true
	}
	var n json.Number
	return n, json.Unmarshal(raw, &n) == nil
}

// validNumber reports whether b is a JSON number literal, by the grammar
// of RFC 8259: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func validNumber(b []byte) bool {
	digits := func(i int) int { // the index after the digits from i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i
	}
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(i + 1)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(b)
}

// novaInteger reads an integer as Nova's integer-or-digits types do
// (positive_integer, non_negative_integer, flavor sizes): a JSON integer
// (1.0 too) or a string of digits, from min to max.
func novaInteger(field string, raw json.RawMessage, min, max int64) (int64, error) {
	var f float64
	if s, ok := jsonString(raw); ok {
		if s == "" || strings.Trim(s, "0123456789") != "" {
			return 0, invalidInput(field, s, fmt.Sprintf("'%s' does not match '^[0-9]+$'", shown(s)))
		}
		s = strings.TrimLeft(s, "0")
		if len(s) > 18 {
			return 0, invalidInput(field, s, fmt.Sprintf("%s is greater than the maximum of %d", shown(s), max))
		}
		n, _ := strconv.ParseInt("0"+s, 10, 64)
		f = float64(n)
	} else if num, ok := jsonNumber(raw); ok {
		v, err := num.Float64()
		if err != nil || v != math.Trunc(v) {
			return 0, invalidInput(field, raw, fmt.Sprintf("%s is not of type 'integer', 'string'", shown(raw)))
		}
		f = v
	} else {
		return 0, invalidInput(field, raw, fmt.Sprintf("%s is not of type 'integer', 'string'", shown(raw)))
	}
	switch {
	case f < float64(min):
		return 0, invalidInput(field, raw, fmt.Sprintf("%s is less than the minimum of %d", shown(raw), min))
	case f > float64(max):
		return 0, invalidInput(field, raw, fmt.Sprintf("%s is greater than the maximum of %d", shown(raw), max))
	}
	return int64(f), nil
}

// novaBoolean reads a boolean as Nova's boolean type does: true, false or
// one of the words it takes for them.
func novaBoolean(field string, raw json.RawMessage) (bool, error) {
	switch string(raw) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	if s, ok := jsonString(raw); ok {
		switch s {
		case "True", "TRUE", "true", "1", "ON", "On", "on", "YES", "Yes", "yes":
			return true, nil
		case "False", "FALSE", "false", "0", "OFF", "Off", "off", "NO", "No", "no":
			return false, nil
		}
	}
	return false, invalidInput(field, raw, fmt.Sprintf("%s is not one of [True, 'True', 'TRUE', 'true', '1', 'ON', 'On', 'on', "+
		"'YES', 'Yes', 'yes', False, 'False', 'FALSE', 'false', '0', 'OFF', 'Off', 'off', 'NO', 'No', 'no']", shown(raw)))
}

// novaRxTxFactor reads a flavor's rxtx_factor as Nova does: a number, or
// a string of one (digits, a fraction), above 0 and at most the largest
// float Nova's database keeps.
func novaRxTxFactor(raw json.RawMessage) (float64, error) {
	const field = "rxtx_factor"
	var f float64
	if s, ok := jsonString(raw); ok {
		whole, frac, hasFrac := strings.Cut(s, ".")
		if whole == "" || strings.Trim(whole, "0123456789") != "" || hasFrac && (frac == "" || strings.Trim(frac, "0123456789") != "") {
			return 0, invalidInput(field, s, fmt.Sprintf("'%s' does not match '^[0-9]+(\\.[0-9]+)?$'", shown(s)))
		}
		f, _ = strconv.ParseFloat(s, 64)
	} else if num, ok := jsonNumber(raw); ok {
		v, err := num.Float64()
		if err != nil && !math.IsInf(v, 0) {
			return 0, invalidInput(field, raw, fmt.Sprintf("%s is not of type 'number', 'string'", shown(raw)))
		}
		f = v
	} else {
		return 0, invalidInput(field, raw, fmt.Sprintf("%s is not of type 'number', 'string'", shown(raw)))
	}
	switch {
	case !(f > 0):
		return 0, invalidInput(field, raw, fmt.Sprintf("%s is less than or equal to the minimum of 0", shown(raw)))
	case f > 3.40282e+38:
		return 0, invalidInput(field, raw, fmt.Sprintf("%s is greater than the maximum of 3.40282e+38", shown(raw)))
	}
	return f, nil
}

// novaStringOrNumber reads a field Nova takes as a string or a number
// (a flavor's id, a flavorRef, an extra spec's value): a number becomes
// its JSON literal.
func novaStringOrNumber(field string, raw json.RawMessage) (string, error) {
	if s, ok := jsonString(raw); ok {
		return s, nil
	}
	if n, ok := jsonNumber(raw); ok {
		return n.String(), nil
	}
	return "", invalidInput(field, raw, fmt.Sprintf("%s is not of type 'string', 'number'", shown(raw)))
}
