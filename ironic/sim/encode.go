package sim

import (
	"bytes"
	"encoding/json"
	"slices"
)

// appendJSON appends v as encoding/json renders it with HTML escaping off (objects with
// sorted keys), with a fast path for what documents are made of: objects, lists, strings,
// booleans and null. Listings of many nodes are mostly that; anything else goes through
// encoding/json.
func appendJSON(b []byte, v any) []byte {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		if t {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case string:
		return appendString(b, t)
	case map[string]any:
		if t == nil {
			return append(b, "null"...)
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendJSON(b, t[k])
		}
		return append(b, '}')
	case []any:
		if t == nil {
			return append(b, "null"...)
		}
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, e)
		}
		return append(b, ']')
	}
	return append(b, encodeStd(v)...)
}

// appendString quotes s; strings of plain printable ASCII are copied as they are.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return append(b, encodeStd(s)...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// encodeStd is encoding/json's rendering of v, HTML escaping off.
func encodeStd(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("sim: encode: " + err.Error())
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}
