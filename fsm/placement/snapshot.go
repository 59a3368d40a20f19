package placement

import (
	"bufio"
	"encoding/json"
	"io"
	"maps"
	"slices"
)

// Snapshot format identifiers; see the package documentation.
const (
	SnapshotFormat  = "corral.placement"
	SnapshotVersion = 1
)

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
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	err := enc.Encode(snapHeader{SnapshotFormat, SnapshotVersion, len(s.providers), len(s.consumers)})
	s.all.each(func(p *provider) bool {
		rec := providerRec{UUID: p.uuid, Name: p.name, Generation: p.gen, Traits: p.traits, Aggregates: p.aggs}
		if p.parent != nil {
			rec.Parent = p.parent.uuid
		}
		if len(p.inv) > 0 {
			rec.Inventories = make(map[string]Inventory, len(p.inv))
			for rc, sl := range p.inv {
				rec.Inventories[rc] = sl.inv
			}
		}
		if err == nil {
			err = enc.Encode(&rec)
		}
		return err == nil
	})
	for _, id := range sortedKeys(s.consumers) {
		if err != nil {
			break
		}
		c := s.consumers[id]
		err = enc.Encode(&consumerRec{c.id, c.project, c.user, c.gen, c.allocs})
	}
	if err == nil {
		err = enc.Encode(snapTrailer{SnapshotFormat})
	}
	if err == nil {
		err = bw.Flush()
	}
	return cw.n, err
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

// ReadFrom replaces the store's contents with a snapshot written by WriteTo,
// after checking it completely; on error the store is unchanged. It returns
// the number of bytes read, which may run past the end of the snapshot:
// give it a reader that holds the snapshot alone.
func (s *Store) ReadFrom(r io.Reader) (int64, error) {
	cr := &countReader{r: r}
	ns, err := decode(cr)
	if err != nil {
		return cr.n, err
	}
	*s = *ns
	return cr.n, nil
}

// Restore decodes a snapshot written by WriteTo into a new store.
func Restore(r io.Reader) (*Store, error) { return decode(r) }

func corrupt(format string, args ...any) error {
	return invalidf("corrupt placement snapshot: "+format, args...)
}

func decode(r io.Reader) (*Store, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 64<<10))
	dec.DisallowUnknownFields()
	var h snapHeader
	if err := dec.Decode(&h); err != nil {
		return nil, corrupt("header: %v", err)
	}
	if h.Format != SnapshotFormat || h.Version != SnapshotVersion {
		return nil, corrupt("format %q version %d, this peer reads %q version %d",
			h.Format, h.Version, SnapshotFormat, SnapshotVersion)
	}
	if h.Providers < 0 || h.Consumers < 0 {
		return nil, corrupt("negative counts in header")
	}
	s := New()
	type link struct {
		p      *provider
		parent string
	}
	var links []link
	prev := ""
	for i := 0; i < h.Providers; i++ {
		var rec providerRec
		if err := dec.Decode(&rec); err != nil {
			return nil, corrupt("provider record %d: %v", i, err)
		}
		p, err := s.loadProvider(&rec, prev)
		if err != nil {
			return nil, err
		}
		prev = p.uuid
		if rec.Parent != "" {
			links = append(links, link{p, rec.Parent})
		}
	}
	for _, l := range links {
		pp := s.providers[l.parent]
		if pp == nil || pp == l.p {
			return nil, corrupt("provider %s has unknown parent %q", l.p.uuid, l.parent)
		}
		l.p.parent = pp
		pp.addChild(l.p)
	}
	acyclic := make(map[*provider]bool) // true: reaches a root; false: on the current path
	for _, l := range links {
		var path []*provider
		for a := l.p; a != nil && !acyclic[a]; a = a.parent {
			if _, onPath := acyclic[a]; onPath {
				return nil, corrupt("provider %s is in a parent loop", a.uuid)
			}
			acyclic[a] = false
			path = append(path, a)
		}
		for _, a := range path {
			acyclic[a] = true
		}
	}
	prev = ""
	for i := 0; i < h.Consumers; i++ {
		var rec consumerRec
		if err := dec.Decode(&rec); err != nil {
			return nil, corrupt("consumer record %d: %v", i, err)
		}
		if err := s.loadConsumer(&rec, prev); err != nil {
			return nil, err
		}
		prev = rec.UUID
	}
	var t snapTrailer
	if err := dec.Decode(&t); err != nil || t.End != SnapshotFormat {
		return nil, corrupt("missing trailer after %d providers and %d consumers", h.Providers, h.Consumers)
	}
	return s, nil
}

// loadProvider checks that rec is canonical and adds it (without parent).
func (s *Store) loadProvider(rec *providerRec, prev string) (*provider, error) {
	if u, ok := NormalizeUUID(rec.UUID); !ok || u != rec.UUID || u <= prev {
		return nil, corrupt("provider UUID %q is not canonical or not in order", rec.UUID)
	}
	if err := validName(rec.Name); err != nil {
		return nil, corrupt("provider %s: %v", rec.UUID, err)
	}
	if s.byName[rec.Name] != nil {
		return nil, corrupt("provider name %q is used twice", rec.Name)
	}
	traits, err := validTraits(rec.Traits)
	if err != nil || !slices.Equal(traits, rec.Traits) {
		return nil, corrupt("provider %s: traits are not a sorted set of valid traits", rec.UUID)
	}
	aggs, err := normalizeUUIDs(rec.Aggregates, "aggregate")
	if err != nil || !slices.Equal(aggs, rec.Aggregates) {
		return nil, corrupt("provider %s: aggregates are not a sorted set of canonical UUIDs", rec.UUID)
	}
	inv, err := validInventories(rec.UUID, rec.Inventories)
	if err != nil || !maps.Equal(inv, rec.Inventories) {
		return nil, corrupt("provider %s: inventories are not valid and normalised: %v", rec.UUID, err)
	}
	p := &provider{uuid: rec.UUID, name: rec.Name, gen: rec.Generation, traits: traits, aggs: aggs}
	s.providers[p.uuid] = p
	s.byName[p.name] = p
	s.all.push(p)
	for _, t := range traits {
		s.byTrait.push(t, p)
	}
	for _, a := range aggs {
		s.byAgg.push(a, p)
	}
	if len(inv) > 0 {
		p.inv = make(map[string]*slot, len(inv))
		for rc, in := range inv {
			p.inv[rc] = &slot{inv: in, cap: in.Capacity()}
			s.byRC.push(rc, p)
		}
	}
	return p, nil
}

// loadConsumer checks rec against the loaded providers and applies it.
func (s *Store) loadConsumer(rec *consumerRec, prev string) error {
	if u, ok := NormalizeUUID(rec.UUID); !ok || u != rec.UUID || u <= prev {
		return corrupt("consumer UUID %q is not canonical or not in order", rec.UUID)
	}
	if len(rec.Allocations) == 0 {
		return corrupt("consumer %s has no allocations", rec.UUID)
	}
	if validOwner("project_id", rec.ProjectID) != nil || validOwner("user_id", rec.UserID) != nil {
		return corrupt("consumer %s has an invalid project or user", rec.UUID)
	}
	c := &consumer{id: rec.UUID, project: rec.ProjectID, user: rec.UserID, gen: rec.Generation, allocs: rec.Allocations}
	for _, pu := range sortedKeys(rec.Allocations) {
		p := s.providers[pu]
		if p == nil || len(rec.Allocations[pu]) == 0 {
			return corrupt("consumer %s: allocation against unknown provider %q or without resources", c.id, pu)
		}
		for _, rc := range sortedKeys(rec.Allocations[pu]) {
			n, sl := rec.Allocations[pu][rc], p.inv[rc]
			if sl == nil || n < 1 || n > MaxAmount || sl.used+n > sl.cap {
				return corrupt("consumer %s: %d %s on provider %s does not fit its inventory", c.id, n, rc, pu)
			}
			sl.used += n
		}
		if p.consumers == nil {
			p.consumers = make(map[string]*consumer)
		}
		p.consumers[c.id] = c
	}
	s.consumers[c.id] = c
	s.addProjectUsage(c.project, c.allocs, 1)
	return nil
}

// Clone returns a deep copy of the store, sharing nothing with it.
func (s *Store) Clone() *Store {
	n := New()
	s.all.each(func(p *provider) bool {
		q := &provider{uuid: p.uuid, name: p.name, gen: p.gen,
			traits: slices.Clone(p.traits), aggs: slices.Clone(p.aggs)}
		n.providers[q.uuid] = q
		n.byName[q.name] = q
		n.all.push(q)
		for _, t := range q.traits {
			n.byTrait.push(t, q)
		}
		for _, a := range q.aggs {
			n.byAgg.push(a, q)
		}
		if len(p.inv) > 0 {
			q.inv = make(map[string]*slot, len(p.inv))
			for rc, sl := range p.inv {
				c := *sl
				q.inv[rc] = &c
				n.byRC.push(rc, q)
			}
		}
		return true
	})
	for uuid, p := range s.providers {
		if p.parent != nil {
			q := n.providers[uuid]
			q.parent = n.providers[p.parent.uuid]
			q.parent.addChild(q)
		}
	}
	for id, c := range s.consumers {
		nc := &consumer{id: id, project: c.project, user: c.user, gen: c.gen, allocs: copyAllocs(c.allocs)}
		n.consumers[id] = nc
		for pu := range nc.allocs {
			q := n.providers[pu]
			if q.consumers == nil {
				q.consumers = make(map[string]*consumer)
			}
			q.consumers[id] = nc
		}
	}
	for project, u := range s.projects {
		n.projects[project] = maps.Clone(u)
	}
	return n
}

// Equal reports whether two stores hold the same state (same encoding).
func Equal(a, b *Store) bool {
	var ea, eb bytesWriter
	_, errA := a.WriteTo(&ea)
	_, errB := b.WriteTo(&eb)
	return errA == nil && errB == nil && string(ea) == string(eb)
}

type bytesWriter []byte

func (b *bytesWriter) Write(p []byte) (int, error) {
	*b = append(*b, p...)
	return len(p), nil
}
