package core

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"

	"github.com/labstack/echo/v4"
)

// jsonSerializer writes every JSON answer (echo's c.JSON) byte for byte
// as encoding/json's Encoder does, the views' map[string]any objects
// without reflection: encoding/json sorts a map's keys through reflect
// and allocates a copy of every key and value, two allocations per field
// of every object of an answer (a server list of 1,000 servers: over
// 10^5). Every other value is encoded by encoding/json itself, into one
// pooled buffer written at once.
type jsonSerializer struct{ echo.DefaultJSONSerializer }

// answers are the buffers answers are encoded into.
var answers = sync.Pool{New: func() any { return new(answer) }}

type answer struct {
	buf  bytes.Buffer
	enc  *json.Encoder
	keys []string
}

// maxPooledAnswer bounds the buffers kept for the next answer.
const maxPooledAnswer = 1 << 20

// Serialize implements echo.JSONSerializer.
func (s jsonSerializer) Serialize(c echo.Context, i any, indent string) error {
	if indent != "" { // ?pretty: as echo does
		return s.DefaultJSONSerializer.Serialize(c, i, indent)
	}
	a := answers.Get().(*answer)
	defer func() {
		if a.buf.Cap() <= maxPooledAnswer {
			answers.Put(a)
		}
	}()
	a.buf.Reset()
	if a.enc == nil {
		a.enc = json.NewEncoder(&a.buf)
	}
	if err := a.value(i); err != nil {
		return err
	}
	a.buf.WriteByte('\n') // as json.Encoder ends every value
	_, err := c.Response().Write(a.buf.Bytes())
	return err
}

// value appends v's encoding to the buffer.
func (a *answer) value(v any) error {
	switch v := v.(type) {
	case map[string]any:
		return a.object(v)
	case []any:
		if v == nil {
			a.buf.WriteString("null")
			return nil
		}
		a.buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				a.buf.WriteByte(',')
			}
			if err := a.value(e); err != nil {
				return err
			}
		}
		a.buf.WriteByte(']')
		return nil
	case string:
		if plainJSONString(v) {
			a.plain(v)
			return nil
		}
	case nil:
		a.buf.WriteString("null")
		return nil
	case bool:
		if v {
			a.buf.WriteString("true")
		} else {
			a.buf.WriteString("false")
		}
		return nil
	}
	// encoding/json's own encoding, less the newline its Encoder adds; on
	// an error it has written nothing.
	if err := a.enc.Encode(v); err != nil {
		return err
	}
	a.buf.Truncate(a.buf.Len() - 1)
	return nil
}

// object appends a map's encoding: its keys sorted, as encoding/json
// sorts them.
func (a *answer) object(m map[string]any) error {
	if m == nil {
		a.buf.WriteString("null")
		return nil
	}
	start := len(a.keys)
	defer func() { // on an error too
		clear(a.keys[start:])
		a.keys = a.keys[:start]
	}()
	for k := range m {
		a.keys = append(a.keys, k)
	}
	keys := a.keys[start:]
	slices.Sort(keys)
	a.buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			a.buf.WriteByte(',')
		}
		if plainJSONString(k) {
			a.plain(k)
		} else if err := a.enc.Encode(k); err != nil {
			return err
		} else {
			a.buf.Truncate(a.buf.Len() - 1)
		}
		a.buf.WriteByte(':')
		if err := a.value(m[k]); err != nil {
			return err
		}
	}
	a.buf.WriteByte('}')
	return nil
}

// plain appends s between quotes (a plainJSONString).
func (a *answer) plain(s string) {
	a.buf.WriteByte('"')
	a.buf.WriteString(s)
	a.buf.WriteByte('"')
}

// plainJSONString reports whether s is written as it is between quotes by
// encoding/json (with its HTML escaping): printable ASCII but '"', '\\',
// '<', '>' and '&'.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b < 0x20 || b >= 0x7f, b == '"', b == '\\', b == '<', b == '>', b == '&':
			return false
		}
	}
	return true
}
