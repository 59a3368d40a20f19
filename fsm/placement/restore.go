package placement

import (
	"bufio"
	"encoding/json"
	"io"
	"maps"
	"slices"
)

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
	p := &provider{uuid: rec.UUID, name: rec.Name, gen: rec.Generation}
	s.insert(p)
	s.replaceTraits(p, traits)
	s.replaceAggregates(p, aggs)
	for _, rc := range sortedKeys(inv) {
		s.putInventory(p, rc, inv[rc])
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
	c := &consumer{id: rec.UUID, project: rec.ProjectID, user: rec.UserID, gen: rec.Generation}
	for _, pu := range sortedKeys(rec.Allocations) {
		p := s.providers[pu]
		if p == nil || len(rec.Allocations[pu]) == 0 {
			return corrupt("consumer %s: allocation against unknown provider %q or without resources", c.id, pu)
		}
		h := holding{p: p}
		for _, rc := range sortedKeys(rec.Allocations[pu]) {
			n, sl := rec.Allocations[pu][rc], p.slot(rc)
			if sl == nil || n < 1 || n > MaxAmount || sl.used+n > sl.cap {
				return corrupt("consumer %s: %d %s on provider %s does not fit its inventory", c.id, n, rc, pu)
			}
			h.res = append(h.res, resAmount{sl.rc, n})
		}
		c.allocs = append(c.allocs, h)
	}
	s.consumers[c.id] = c
	s.hold(c)
	return nil
}
