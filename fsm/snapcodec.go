package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// The binary record bodies of snapshot format versions 2 to 4 (3 adds
// the request id and intent of a server's action, 4 the server fields of
// Nova's API, at the end of the server's record). The big record
// kinds (servers, nodes, placement) are written field by field with
// append-style encoders, no reflection:
//
//   - unsigned integers are uvarints, signed ones zig-zag varints, floats
//     their IEEE 754 bits as a uvarint, booleans one byte (0 or 1);
//   - strings are a uvarint length and the bytes;
//   - maps are a uvarint count and their entries in ascending key order;
//     slices a uvarint count and their elements in order; an empty map or
//     slice reads back as nil, as the JSON records did (omitempty);
//   - a pointer is one byte (0: nil, 1: present) followed by its value;
//   - times are one byte (0: zero time, 1: UTC, 2: fixed offset, followed
//     by the offset in seconds as a varint), then the Unix seconds as a
//     varint and the nanoseconds as a uvarint.
//
// Every field of the struct is written, in declaration order, and a body
// must be consumed exactly. Adding a field to Server, Node or Flavor
// means adding it here and a new snapshot format version; the round-trip
// test fills every field by reflection and fails until then.

// errShortBody is the decoder's error for a body that ends early or
// holds an impossible length.
var errShortBody = errors.New("record body is truncated or malformed")

func appendUint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func appendInt(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendFloat(b []byte, f float64) []byte { return binary.AppendUvarint(b, math.Float64bits(f)) }

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, 0)
	}
	if _, off := t.Zone(); off == 0 {
		b = append(b, 1) // UTC: the JSON records read every zero offset back as UTC too
	} else {
		b = append(b, 2)
		b = binary.AppendVarint(b, int64(off))
	}
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

// smallKeys returns the keys of m in ascending order, in buf when they fit:
// the maps of a record are small, and sorting their keys must not cost an
// allocation each.
func smallKeys[V any](buf *[8]string, m map[string]V) []string {
	ks := buf[:0]
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func appendStrMap(b []byte, m map[string]string) []byte {
	b = binary.AppendUvarint(b, uint64(len(m)))
	if len(m) == 0 {
		return b
	}
	var buf [8]string
	for _, k := range smallKeys(&buf, m) {
		b = appendStr(b, k)
		b = appendStr(b, m[k])
	}
	return b
}

func appendStrs(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendStr(b, s)
	}
	return b
}

// decoder reads one record body. The body is held as one string, so the
// decoded strings share its memory instead of allocating one each. The
// first error sticks; every read after it returns zero values.
type decoder struct {
	s   string
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errShortBody
	}
	d.s = ""
}

func (d *decoder) uint() uint64 {
	var v uint64
	for i := 0; i < len(d.s) && i < binary.MaxVarintLen64; i++ {
		c := d.s[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break // overflows 64 bits
			}
			d.s = d.s[i+1:]
			return v | uint64(c)<<(7*i)
		}
		v |= uint64(c&0x7f) << (7 * i)
	}
	d.fail()
	return 0
}

func (d *decoder) int() int64 {
	u := d.uint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

// length reads a count or a string length; each counted item takes at
// least min bytes, so a length beyond what remains is malformed.
func (d *decoder) length(min int) int {
	n := d.uint()
	if n > uint64(len(d.s)/min) {
		d.fail()
		return 0
	}
	return int(n)
}

func (d *decoder) str() string {
	n := d.length(1)
	v := d.s[:n]
	d.s = d.s[n:]
	return v
}

func (d *decoder) bool() bool {
	if len(d.s) == 0 || d.s[0] > 1 {
		d.fail()
		return false
	}
	v := d.s[0] == 1
	d.s = d.s[1:]
	return v
}

func (d *decoder) float() float64 { return math.Float64frombits(d.uint()) }

// present reads a pointer's presence byte.
func (d *decoder) present() bool { return d.bool() }

func (d *decoder) time() time.Time {
	if len(d.s) == 0 {
		d.fail()
		return time.Time{}
	}
	kind := d.s[0]
	d.s = d.s[1:]
	var loc *time.Location
	switch kind {
	case 0:
		return time.Time{}
	case 1:
		loc = time.UTC
	case 2:
		off := d.int()
		if off == 0 || off < -24*3600 || off > 24*3600 { // a zero offset is written as UTC
			d.fail()
			return time.Time{}
		}
		loc = time.FixedZone("", int(off))
	default:
		d.fail()
		return time.Time{}
	}
	sec, nsec := d.int(), d.uint()
	if nsec >= 1e9 {
		d.fail()
		return time.Time{}
	}
	t := time.Unix(sec, int64(nsec)).In(loc)
	if t.IsZero() {
		d.fail() // written as kind 0
		return time.Time{}
	}
	return t
}

// strMap reads a map written by appendStrMap; keys must be ascending.
func (d *decoder) strMap() map[string]string {
	n := d.length(2)
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	prev := ""
	for i := range n {
		k := d.str()
		if i > 0 && k <= prev {
			d.fail()
			return nil
		}
		m[k], prev = d.str(), k
	}
	return m
}

func (d *decoder) strs() []string {
	n := d.length(1)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

// done reports the decoder's error, or that bytes were left over.
func (d *decoder) done(what string) error {
	if d.err == nil && len(d.s) != 0 {
		d.err = fmt.Errorf("%d bytes follow the end of the record", len(d.s))
	}
	if d.err != nil {
		return fmt.Errorf("%s record: %w", what, d.err)
	}
	return nil
}

func appendFlavor(b []byte, f *Flavor) []byte {
	b = appendStr(b, f.ID)
	b = appendStr(b, f.Name)
	b = appendInt(b, int64(f.VCPUs))
	b = appendInt(b, int64(f.RAM))
	b = appendInt(b, int64(f.Disk))
	b = appendInt(b, int64(f.Ephemeral))
	b = appendInt(b, int64(f.Swap))
	b = appendFloat(b, f.RxTxFactor)
	b = appendBool(b, f.IsPublic)
	b = appendStr(b, f.Description)
	b = appendStrMap(b, f.ExtraSpecs)
	b = appendStrs(b, f.Access)
	b = appendTime(b, f.CreatedAt)
	return appendTime(b, f.UpdatedAt)
}

func (d *decoder) flavor(sh *sharer) Flavor {
	return Flavor{ID: d.str(), Name: d.str(), VCPUs: int(d.int()), RAM: int(d.int()), Disk: int(d.int()),
		Ephemeral: int(d.int()), Swap: int(d.int()), RxTxFactor: d.float(), IsPublic: d.bool(),
		Description: d.str(), ExtraSpecs: d.sharedStrMap(sh), Access: d.sharedStrs(sh), CreatedAt: d.time(), UpdatedAt: d.time()}
}

// appendServer appends the binary record body of s in format version
// (format 2 drops what only format 3 carries).
func appendServer(b []byte, s *Server, version uint16) []byte {
	b = appendStr(b, s.ID)
	b = appendStr(b, s.Name)
	b = appendStr(b, string(s.Status))
	b = appendStr(b, s.TaskState)
	b = appendFlavor(b, &s.Flavor)
	b = appendStr(b, s.ImageRef)
	b = appendUint(b, uint64(len(s.Networks)))
	for _, n := range s.Networks {
		b = appendStr(b, n.UUID)
		b = appendStr(b, n.Port)
		b = appendStr(b, n.FixedIP)
	}
	b = appendStrMap(b, s.Metadata)
	b = appendStr(b, s.Host)
	b = appendUint(b, s.Epoch)
	b = appendUint(b, s.EpochIndex)
	b = appendStr(b, s.OwnerReason)
	b = appendTime(b, s.OwnerSince)
	b = appendStr(b, s.NodeUUID)
	b = appendStr(b, s.AllocationUUID)
	b = appendClaim(b, s.Claim)
	b = appendStr(b, s.ClaimedNode)
	b = appendBool(b, s.Fault != nil)
	if s.Fault != nil {
		b = appendInt(b, int64(s.Fault.Code))
		b = appendStr(b, s.Fault.Message)
		b = appendTime(b, s.Fault.Created)
	}
	b = appendStr(b, s.RequestID)
	b = appendTime(b, s.CreatedAt)
	b = appendTime(b, s.UpdatedAt)
	b = appendStr(b, s.ProjectID)
	b = appendStr(b, s.UserID)
	b = appendStr(b, s.KeyName)
	b = appendStr(b, s.KeyData)
	b = appendStr(b, s.UserData)
	b = appendBool(b, s.Action != nil)
	if s.Action != nil {
		b = appendStr(b, s.Action.Kind)
		b = appendStr(b, s.Action.ImageRef)
		b = appendTime(b, s.Action.RequestedAt)
		if version >= snapshotVersionIntents {
			b = appendStr(b, s.Action.RequestID)
			in := s.Action.Intent
			b = appendBool(b, in != nil)
			if in != nil {
				b = appendStr(b, in.Host)
				b = appendUint(b, in.Epoch)
				b = appendStr(b, in.Step)
				b = appendStr(b, in.Witness)
				b = appendTime(b, in.At)
			}
		}
		if version >= snapshotVersionFields {
			b = appendBool(b, s.Action.PreserveEphemeral)
		}
	}
	b = appendBool(b, s.Locked)
	b = appendStr(b, s.LockedReason)
	if version < snapshotVersionFields {
		return b
	}
	b = appendStr(b, s.ReservationID)
	b = appendInt(b, int64(s.LaunchIndex))
	b = appendBool(b, s.Description != nil)
	if s.Description != nil {
		b = appendStr(b, *s.Description)
	}
	b = appendStr(b, s.AccessIPv4)
	b = appendStr(b, s.AccessIPv6)
	b = appendStrs(b, s.Tags)
	return appendStr(b, s.AdminPass)
}

func appendClaim(b []byte, c map[string]map[string]int64) []byte {
	b = appendUint(b, uint64(len(c)))
	if len(c) == 0 {
		return b
	}
	var pbuf, rbuf [8]string
	for _, prov := range smallKeys(&pbuf, c) {
		b = appendStr(b, prov)
		res := c[prov]
		b = appendUint(b, uint64(len(res)))
		for _, rc := range smallKeys(&rbuf, res) {
			b = appendStr(b, rc)
			b = appendInt(b, res[rc])
		}
	}
	return b
}

func (d *decoder) claim(sh *sharer) map[string]map[string]int64 {
	n := d.length(2)
	if n == 0 {
		return nil
	}
	out := make(map[string]map[string]int64, n)
	prev := ""
	for i := range n {
		prov := d.str()
		if i > 0 && prov <= prev {
			d.fail()
			return nil
		}
		prev = prov
		out[prov] = d.sharedCounts(sh)
		if d.err != nil {
			return nil
		}
	}
	return out
}

// counts reads the resources of one provider of a claim.
func (d *decoder) counts() map[string]int64 {
	m := d.length(2)
	res := make(map[string]int64, m) // present even when empty, as JSON kept it
	prc := ""
	for j := range m {
		rc := d.str()
		if j > 0 && rc <= prc {
			d.fail()
			return nil
		}
		res[rc], prc = d.int(), rc
	}
	return res
}

// decodeServer parses a body written by appendServer for format version.
func decodeServer(body string, version uint16) (Server, error) {
	return decodeServerShared(body, version, nil)
}

// decodeServerShared is decodeServer sharing the flavor's extra specs and
// access list, the metadata and the claimed resources through sh (nil:
// none shared).
func decodeServerShared(body string, version uint16, sh *sharer) (Server, error) {
	d := &decoder{s: body}
	var s Server
	s.ID, s.Name, s.Status, s.TaskState = d.str(), d.str(), ServerStatus(d.str()), d.str()
	s.Flavor = d.flavor(sh)
	s.ImageRef = d.str()
	if n := d.length(3); n > 0 {
		s.Networks = make([]Network, n)
		for i := range s.Networks {
			s.Networks[i] = Network{UUID: d.str(), Port: d.str(), FixedIP: d.str()}
		}
	}
	s.Metadata = d.sharedStrMap(sh)
	s.Host, s.Epoch, s.EpochIndex, s.OwnerReason, s.OwnerSince = d.str(), d.uint(), d.uint(), d.str(), d.time()
	s.NodeUUID, s.AllocationUUID = d.str(), d.str()
	s.Claim = d.claim(sh)
	s.ClaimedNode = d.str()
	if d.present() {
		s.Fault = &Fault{Code: int(d.int()), Message: d.str(), Created: d.time()}
	}
	s.RequestID, s.CreatedAt, s.UpdatedAt = d.str(), d.time(), d.time()
	s.ProjectID, s.UserID, s.KeyName, s.KeyData, s.UserData = d.str(), d.str(), d.str(), d.str(), d.str()
	if d.present() {
		s.Action = &ServerAction{Kind: d.str(), ImageRef: d.str(), RequestedAt: d.time()}
		if version >= snapshotVersionIntents {
			s.Action.RequestID = d.str()
			if d.present() {
				s.Action.Intent = &ActionIntent{Host: d.str(), Epoch: d.uint(), Step: d.str(), Witness: d.str(), At: d.time()}
			}
		}
		if version >= snapshotVersionFields {
			s.Action.PreserveEphemeral = d.bool()
		}
	}
	s.Locked, s.LockedReason = d.bool(), d.str()
	if version >= snapshotVersionFields {
		s.ReservationID, s.LaunchIndex = d.str(), int(d.int())
		if d.present() {
			desc := d.str()
			s.Description = &desc
		}
		s.AccessIPv4, s.AccessIPv6, s.Tags, s.AdminPass = d.str(), d.str(), d.strs(), d.str()
	}
	return s, d.done("server")
}

// appendNode appends the binary record body of n.
func appendNode(b []byte, n *Node) []byte {
	b = appendStr(b, n.UUID)
	b = appendStr(b, n.Name)
	b = appendStr(b, n.ResourceClass)
	b = appendStr(b, n.ProvisionState)
	b = appendStr(b, n.PowerState)
	b = appendBool(b, n.Maintenance)
	b = appendStrMap(b, n.Properties)
	b = appendStrMap(b, n.Capabilities)
	b = appendStrs(b, n.Traits)
	b = appendStr(b, n.InstanceUUID)
	b = appendStr(b, n.AllocationUUID)
	b = appendBool(b, n.Missing)
	b = appendTime(b, n.LastSeen)
	b = appendStr(b, n.InventoryConflict)
	return appendTime(b, n.ConflictSince)
}

// decodeNode parses a body written by appendNode.
func decodeNode(body string) (Node, error) { return decodeNodeShared(body, nil) }

// decodeNodeShared is decodeNode sharing the properties, capabilities and
// traits through sh (nil: none shared).
func decodeNodeShared(body string, sh *sharer) (Node, error) {
	d := &decoder{s: body}
	n := Node{UUID: d.str(), Name: d.str(), ResourceClass: d.str(), ProvisionState: d.str(), PowerState: d.str(),
		Maintenance: d.bool(), Properties: d.sharedStrMap(sh), Capabilities: d.sharedStrMap(sh), Traits: d.sharedStrs(sh),
		InstanceUUID: d.str(), AllocationUUID: d.str(), Missing: d.bool(), LastSeen: d.time(),
		InventoryConflict: d.str(), ConflictSince: d.time()}
	return n, d.done("node")
}
