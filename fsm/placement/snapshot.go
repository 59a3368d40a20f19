package placement

import (
	"bufio"
	"io"
	"math"
	"strconv"
)

// Snapshot format identifiers; see the package documentation.
const (
	SnapshotFormat  = "corral.placement"
	SnapshotVersion = 1
)

// The records of the snapshot format, one JSON line each. WriteTo writes
// them by hand, field for field as encoding/json would, and the decoder
// reads them with encoding/json.

type snapHeader struct {
	Format    string `json:"format"`
	Version   int    `json:"version"`
	Providers int    `json:"providers"`
	Consumers int    `json:"consumers"`
}

type providerRec struct {
	UUID        string               `json:"uuid"`
	Name        string               `json:"name"`
	Parent      string               `json:"parent,omitempty"`
	Generation  uint64               `json:"generation"`
	Traits      []string             `json:"traits,omitempty"`
	Aggregates  []string             `json:"aggregates,omitempty"`
	Inventories map[string]Inventory `json:"inventories,omitempty"`
}

type consumerRec struct {
	UUID        string                      `json:"uuid"`
	ProjectID   string                      `json:"project_id"`
	UserID      string                      `json:"user_id"`
	Generation  uint64                      `json:"generation"`
	Allocations map[string]map[string]int64 `json:"allocations"`
}

type snapTrailer struct {
	End string `json:"end"`
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// WriteTo writes the canonical encoding of the store to w and returns the
// number of bytes written. Equal stores give identical bytes.
func (s *Store) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 64<<10)
	b := make([]byte, 0, 4096)
	b = append(b, `{"format":`...)
	b = appendString(b, SnapshotFormat)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, SnapshotVersion, 10)
	b = append(b, `,"providers":`...)
	b = strconv.AppendInt(b, int64(len(s.providers)), 10)
	b = append(b, `,"consumers":`...)
	b = strconv.AppendInt(b, int64(len(s.consumers)), 10)
	b = append(b, "}\n"...)
	_, err := bw.Write(b)
	for _, p := range s.ordered() {
		if err != nil {
			break
		}
		_, err = bw.Write(appendProvider(b[:0], p))
	}
	for _, id := range sortedKeys(s.consumers) {
		if err != nil {
			break
		}
		_, err = bw.Write(appendConsumer(b[:0], s.consumers[id]))
	}
	if err == nil {
		_, err = bw.WriteString(`{"end":"` + SnapshotFormat + "\"}\n")
	}
	if err == nil {
		err = bw.Flush()
	}
	return cw.n, err
}

func appendProvider(b []byte, p *provider) []byte {
	b = append(b, `{"uuid":`...)
	b = appendString(b, p.uuid)
	b = append(b, `,"name":`...)
	b = appendString(b, p.name)
	if p.parent != nil {
		b = append(b, `,"parent":`...)
		b = appendString(b, p.parent.uuid)
	}
	b = append(b, `,"generation":`...)
	b = strconv.AppendUint(b, p.gen, 10)
	b = appendStrings(b, `,"traits":`, p.traits)
	b = appendStrings(b, `,"aggregates":`, p.aggs)
	for i, sl := range p.inv {
		if i == 0 {
			b = append(b, `,"inventories":{`...)
		} else {
			b = append(b, ',')
		}
		b = appendString(b, sl.rc)
		b = append(b, `:{"total":`...)
		b = strconv.AppendInt(b, sl.inv.Total, 10)
		b = append(b, `,"reserved":`...)
		b = strconv.AppendInt(b, sl.inv.Reserved, 10)
		b = append(b, `,"min_unit":`...)
		b = strconv.AppendInt(b, sl.inv.MinUnit, 10)
		b = append(b, `,"max_unit":`...)
		b = strconv.AppendInt(b, sl.inv.MaxUnit, 10)
		b = append(b, `,"step_size":`...)
		b = strconv.AppendInt(b, sl.inv.StepSize, 10)
		b = append(b, `,"allocation_ratio":`...)
		b = appendFloat(b, sl.inv.AllocationRatio)
		b = append(b, '}')
	}
	if len(p.inv) > 0 {
		b = append(b, '}')
	}
	return append(b, "}\n"...)
}

func appendConsumer(b []byte, c *consumer) []byte {
	b = append(b, `{"uuid":`...)
	b = appendString(b, c.id)
	b = append(b, `,"project_id":`...)
	b = appendString(b, c.project)
	b = append(b, `,"user_id":`...)
	b = appendString(b, c.user)
	b = append(b, `,"generation":`...)
	b = strconv.AppendUint(b, c.gen, 10)
	b = append(b, `,"allocations":{`...)
	for i, h := range c.allocs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, h.p.uuid)
		for j, r := range h.res {
			if j == 0 {
				b = append(b, ":{"...)
			} else {
				b = append(b, ',')
			}
			b = appendString(b, r.rc)
			b = append(b, ':')
			b = strconv.AppendInt(b, r.n, 10)
		}
		b = append(b, '}')
	}
	return append(b, "}}\n"...)
}

// appendStrings appends key and a JSON array of ss, or nothing if ss is empty.
func appendStrings(b []byte, key string, ss []string) []byte {
	if len(ss) == 0 {
		return b
	}
	b = append(b, key...)
	for i, s := range ss {
		if i == 0 {
			b = append(b, '[')
		} else {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendString appends s as a JSON string; s is valid UTF-8.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// appendFloat formats f as encoding/json does: shortest representation
// that reads back exactly, in exponent form only for very large or small
// magnitudes.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
