package placement

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
)

// The binary encoding of the store, used by the state machine's snapshots
// (format version 2 and later). It carries what WriteTo carries, as a
// series of records handed to the caller one by one, each framed by the
// caller:
//
//	header    'H' format version providers consumers
//	provider  'P' uuid name parent generation traits aggregates inventories
//	consumer  'C' uuid project user generation allocations
//
// in this order, providers and consumers each in UUID order. Strings are a
// uvarint length and the bytes, counts and unsigned numbers uvarints,
// signed numbers zig-zag varints, the allocation ratio its IEEE 754 bits
// as a uvarint; an inventory is class total reserved min_unit max_unit
// step_size ratio, an allocation the provider UUID and its (class, amount)
// pairs. Like WriteTo, equal stores give identical records.

// BinaryVersion is the version of the binary record encoding.
const BinaryVersion = 1

// Record kinds of the binary encoding.
const (
	binHeader   = 'H'
	binProvider = 'P'
	binConsumer = 'C'
)

// EncodeRecords calls emit with each binary record of the store, in
// canonical order. The slice passed to emit is reused once emit returns.
func (s *Store) EncodeRecords(emit func(rec []byte) error) error {
	b := make([]byte, 0, 512)
	b = append(b, binHeader)
	b = appendBinStr(b, SnapshotFormat)
	b = binary.AppendUvarint(b, BinaryVersion)
	b = binary.AppendUvarint(b, uint64(len(s.providers)))
	b = binary.AppendUvarint(b, uint64(len(s.consumers)))
	if err := emit(b); err != nil {
		return err
	}
	for _, p := range s.ordered() {
		if err := emit(appendBinProvider(b[:0], p)); err != nil {
			return err
		}
	}
	// Consumer IDs are canonical UUIDs: their 128-bit keys sort as the
	// strings do, without comparing strings; the sorted elements hold no
	// pointers, so swapping them costs no write barrier.
	cs := make([]*consumer, 0, len(s.consumers))
	for _, c := range s.consumers {
		cs = append(cs, c)
	}
	type keyed struct {
		k uuidKey
		i int
	}
	ks := make([]keyed, len(cs))
	for i, c := range cs {
		ks[i] = keyed{keyOf(c.id), i}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if c := a.k.cmp(b.k); c != 0 {
			return c
		}
		return strings.Compare(cs[a.i].id, cs[b.i].id)
	})
	for _, k := range ks {
		if err := emit(appendBinConsumer(b[:0], cs[k.i])); err != nil {
			return err
		}
	}
	return nil
}

func appendBinStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBinProvider(b []byte, p *provider) []byte {
	b = append(b, binProvider)
	b = appendBinStr(b, p.uuid)
	b = appendBinStr(b, p.name)
	if p.parent != nil {
		b = appendBinStr(b, p.parent.uuid)
	} else {
		b = appendBinStr(b, "")
	}
	b = binary.AppendUvarint(b, p.gen)
	b = binary.AppendUvarint(b, uint64(len(p.traits)))
	for _, t := range p.traits {
		b = appendBinStr(b, t)
	}
	b = binary.AppendUvarint(b, uint64(len(p.aggs)))
	for _, a := range p.aggs {
		b = appendBinStr(b, a)
	}
	b = binary.AppendUvarint(b, uint64(len(p.inv)))
	for _, sl := range p.inv {
		b = appendBinStr(b, sl.rc)
		b = binary.AppendVarint(b, sl.inv.Total)
		b = binary.AppendVarint(b, sl.inv.Reserved)
		b = binary.AppendVarint(b, sl.inv.MinUnit)
		b = binary.AppendVarint(b, sl.inv.MaxUnit)
		b = binary.AppendVarint(b, sl.inv.StepSize)
		b = binary.AppendUvarint(b, math.Float64bits(sl.inv.AllocationRatio))
	}
	return b
}

func appendBinConsumer(b []byte, c *consumer) []byte {
	b = append(b, binConsumer)
	b = appendBinStr(b, c.id)
	b = appendBinStr(b, c.project)
	b = appendBinStr(b, c.user)
	b = binary.AppendUvarint(b, c.gen)
	b = binary.AppendUvarint(b, uint64(len(c.allocs)))
	for _, h := range c.allocs {
		b = appendBinStr(b, h.p.uuid)
		b = binary.AppendUvarint(b, uint64(len(h.res)))
		for _, r := range h.res {
			b = appendBinStr(b, r.rc)
			b = binary.AppendVarint(b, r.n)
		}
	}
	return b
}

// Decoder rebuilds a store from the records of EncodeRecords, checking
// them as ReadFrom checks a snapshot.
type Decoder struct {
	s                    *Store
	providers, consumers int    // announced by the header
	np, nc               int    // read so far
	prev, prevC          string // last provider and consumer UUIDs read
	links                []link
	linked               bool
	header               bool
	err                  error
}

type link struct {
	p      *provider
	parent string
}

// NewDecoder returns a decoder for one encoded store.
func NewDecoder() *Decoder { return &Decoder{s: New()} }

// malformed is the error of a record that ends early, holds an impossible
// length or is not in canonical order.
func malformed() error { return corrupt("binary record is truncated or malformed") }

// binReader reads the fields of one record; the first error sticks.
type binReader struct {
	s   string
	bad bool
}

func (r *binReader) uint() uint64 {
	var v uint64
	for i := 0; i < len(r.s) && i < binary.MaxVarintLen64; i++ {
		c := r.s[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break // overflows 64 bits
			}
			r.s = r.s[i+1:]
			return v | uint64(c)<<(7*i)
		}
		v |= uint64(c&0x7f) << (7 * i)
	}
	r.bad, r.s = true, ""
	return 0
}

func (r *binReader) int() int64 {
	u := r.uint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

func (r *binReader) count(min int) int {
	n := r.uint()
	if n > uint64(len(r.s)/min) {
		r.bad, r.s = true, ""
		return 0
	}
	return int(n)
}

func (r *binReader) str() string {
	n := r.count(1)
	v := r.s[:n]
	r.s = r.s[n:]
	return v
}

func (r *binReader) strs() []string {
	n := r.count(1)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.str()
	}
	return out
}

// Add decodes one record. rec is not retained: the strings of the store
// are copied from it.
func (d *Decoder) Add(rec []byte) error { return d.AddString(string(rec)) }

// AddString is Add for a record the store may keep parts of.
func (d *Decoder) AddString(rec string) error {
	if d.err != nil {
		return d.err
	}
	d.err = d.add(rec)
	return d.err
}

func (d *Decoder) add(rec string) error {
	if len(rec) == 0 {
		return corrupt("empty record")
	}
	r := &binReader{s: rec[1:]}
	switch kind := rec[0]; {
	case kind == binHeader && !d.header:
		format, version, np, nc := r.str(), r.uint(), r.uint(), r.uint()
		if r.bad || len(r.s) != 0 || np > math.MaxInt32 || nc > math.MaxInt32 {
			return corrupt("binary header is malformed")
		}
		if format != SnapshotFormat || version != BinaryVersion {
			return corrupt("binary header: format %q version %d, this peer reads %q version %d",
				format, version, SnapshotFormat, BinaryVersion)
		}
		d.providers, d.consumers, d.header = int(np), int(nc), true
		// Size the maps for what the header announces, within reason: a
		// corrupt count must not allocate without limit.
		hint := func(n int) int { return min(n, 1<<20) }
		d.s.providers = make(map[string]*provider, hint(d.providers))
		d.s.byName = make(map[string]*provider, hint(d.providers))
		d.s.consumers = make(map[string]*consumer, hint(d.consumers))
		d.s.slots = make([]*provider, 0, hint(d.providers))
		d.s.ids = make([]uuidKey, 0, hint(d.providers))
		return nil
	case !d.header:
		return corrupt("record before the binary header")
	case kind == binProvider && d.np < d.providers:
		p, parent, err := d.s.loadBinProvider(r, d.prev)
		if err != nil {
			return fmt.Errorf("provider record %d: %w", d.np, err)
		}
		d.prev = p.uuid
		if parent != "" {
			d.links = append(d.links, link{p, parent})
		}
		d.np++
		return nil
	case kind == binConsumer && d.np == d.providers && d.nc < d.consumers:
		if err := d.link(); err != nil {
			return err
		}
		c, err := d.s.loadBinConsumer(r, d.prevC)
		if err != nil {
			return fmt.Errorf("consumer record %d: %w", d.nc, err)
		}
		d.prevC = c.id
		d.nc++
		return nil
	}
	return corrupt("unexpected binary record %q after %d of %d providers and %d of %d consumers",
		rec[0], d.np, d.providers, d.nc, d.consumers)
}

// link attaches every provider to its parent, once all are read.
func (d *Decoder) link() error {
	if d.linked {
		return nil
	}
	d.linked = true
	for _, l := range d.links {
		pp := d.s.providers[l.parent]
		if pp == nil || pp == l.p {
			return corrupt("provider %s has unknown parent %q", l.p.uuid, l.parent)
		}
		l.p.parent = pp
		pp.addChild(l.p)
	}
	acyclic := make(map[*provider]bool) // true: reaches a root; false: on the current path
	for _, l := range d.links {
		var path []*provider
		for a := l.p; a != nil && !acyclic[a]; a = a.parent {
			if _, onPath := acyclic[a]; onPath {
				return corrupt("provider %s is in a parent loop", a.uuid)
			}
			acyclic[a] = false
			path = append(path, a)
		}
		for _, a := range path {
			acyclic[a] = true
		}
	}
	d.links = nil
	return nil
}

// Finish returns the decoded store once every announced record was added.
func (d *Decoder) Finish() (*Store, error) {
	if d.err != nil {
		return nil, d.err
	}
	if !d.header || d.np != d.providers || d.nc != d.consumers {
		return nil, corrupt("binary records end after %d of %d providers and %d of %d consumers",
			d.np, d.providers, d.nc, d.consumers)
	}
	if err := d.link(); err != nil {
		return nil, err
	}
	return d.s, nil
}

// loadBinProvider reads a provider record, checks it as loadProvider checks
// a JSON one, and adds it (without parent, returned for linking).
func (s *Store) loadBinProvider(r *binReader, prev string) (*provider, string, error) {
	uuid, name, parent, gen := r.str(), r.str(), r.str(), r.uint()
	traits, aggs := r.strs(), r.strs()
	type classInv struct {
		rc  string
		inv Inventory
	}
	var buf [4]classInv
	invs := buf[:0]
	for i, n := 0, r.count(8); i < n; i++ {
		rc := r.str()
		inv := Inventory{Total: r.int(), Reserved: r.int(), MinUnit: r.int(), MaxUnit: r.int(), StepSize: r.int(),
			AllocationRatio: math.Float64frombits(r.uint())}
		if i > 0 && rc <= invs[i-1].rc {
			r.bad = true
		}
		invs = append(invs, classInv{rc, inv})
	}
	if r.bad || len(r.s) != 0 {
		return nil, "", malformed()
	}
	if u, ok := NormalizeUUID(uuid); !ok || u != uuid || u <= prev {
		return nil, "", corrupt("provider UUID %q is not canonical or not in order", uuid)
	}
	if err := validName(name); err != nil {
		return nil, "", corrupt("provider %s: %v", uuid, err)
	}
	if s.byName[name] != nil {
		return nil, "", corrupt("provider name %q is used twice", name)
	}
	if len(traits) > 0 {
		if v, err := validTraits(traits); err != nil || !slices.Equal(v, traits) {
			return nil, "", corrupt("provider %s: traits are not a sorted set of valid traits", uuid)
		}
	}
	if len(aggs) > 0 {
		if v, err := normalizeUUIDs(aggs, "aggregate"); err != nil || !slices.Equal(v, aggs) {
			return nil, "", corrupt("provider %s: aggregates are not a sorted set of canonical UUIDs", uuid)
		}
	}
	for _, ci := range invs {
		if err := ValidateResourceClass(ci.rc); err != nil {
			return nil, "", corrupt("provider %s: inventories are not valid and normalised: %v", uuid, err)
		}
		if norm, err := ci.inv.normalize(uuid, ci.rc); err != nil || norm != ci.inv {
			return nil, "", corrupt("provider %s: inventories are not valid and normalised: %v", uuid, err)
		}
	}
	p := &provider{uuid: uuid, name: name, gen: gen}
	s.insert(p)
	if len(traits) > 0 {
		s.replaceTraits(p, traits)
	}
	if len(aggs) > 0 {
		s.replaceAggregates(p, aggs)
	}
	if len(invs) > 0 {
		p.inv = p.inv1[:0:1]
		if len(invs) > 1 {
			p.inv = make([]slot, 0, len(invs))
		}
		for _, ci := range invs {
			s.putInventory(p, ci.rc, ci.inv)
		}
	}
	return p, parent, nil
}

// loadBinConsumer reads a consumer record, checks it against the loaded
// providers as loadConsumer checks a JSON one, and applies it.
func (s *Store) loadBinConsumer(r *binReader, prev string) (*consumer, error) {
	// A consumer holds one provider's resources, most often one class
	// (a server's node): one allocation for the three.
	one := &struct {
		c consumer
		h [1]holding
		r [1]resAmount
	}{}
	c := &one.c
	c.id, c.project, c.user, c.gen = r.str(), r.str(), r.str(), r.uint()
	n := r.count(3)
	if r.bad {
		return nil, malformed()
	}
	if u, ok := NormalizeUUID(c.id); !ok || u != c.id || u <= prev {
		return nil, corrupt("consumer UUID %q is not canonical or not in order", c.id)
	}
	if n == 0 {
		return nil, corrupt("consumer %s has no allocations", c.id)
	}
	if validOwner("project_id", c.project) != nil || validOwner("user_id", c.user) != nil {
		return nil, corrupt("consumer %s has an invalid project or user", c.id)
	}
	c.allocs = one.h[:0:1]
	if n > 1 {
		c.allocs = make([]holding, 0, n)
	}
	for i := range n {
		pu, m := r.str(), r.count(2)
		if r.bad {
			return nil, malformed()
		}
		p := s.providers[pu]
		if p == nil || m == 0 || i > 0 && pu <= c.allocs[i-1].p.uuid {
			return nil, corrupt("consumer %s: allocation against unknown provider %q, out of order or without resources", c.id, pu)
		}
		h := holding{p: p}
		if n == 1 && m == 1 {
			h.res = one.r[:0:1]
		} else {
			h.res = make([]resAmount, 0, m)
		}
		for j := range m {
			rc, amount := r.str(), r.int()
			if r.bad {
				return nil, malformed()
			}
			sl := p.slot(rc)
			if sl == nil || j > 0 && rc <= h.res[j-1].rc || amount < 1 || amount > MaxAmount || sl.used+amount > sl.cap {
				return nil, corrupt("consumer %s: %d %s on provider %s does not fit its inventory", c.id, amount, rc, pu)
			}
			h.res = append(h.res, resAmount{sl.rc, amount})
		}
		c.allocs = append(c.allocs, h)
	}
	if len(r.s) != 0 {
		return nil, malformed()
	}
	s.consumers[c.id] = c
	s.hold(c)
	return c, nil
}
