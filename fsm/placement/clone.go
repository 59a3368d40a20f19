package placement

import (
	"maps"
	"slices"
)

// Clone returns a deep copy of the store, sharing nothing with it.
func (s *Store) Clone() *Store {
	n := &Store{
		providers: make(map[string]*provider, len(s.providers)),
		byName:    make(map[string]*provider, len(s.byName)),
		slots:     make([]*provider, len(s.slots)),
		ids:       slices.Clone(s.ids),
		free:      slices.Clone(s.free),
		live:      *s.live.clone(),
		byRC:      s.byRC.clone(),
		byFree:    s.byFree.clone(),
		byTrait:   s.byTrait.clone(),
		byAgg:     s.byAgg.clone(),
		consumers: make(map[string]*consumer, len(s.consumers)),
		projects:  make(map[string]map[string]int64, len(s.projects)),
	}
	for i, p := range s.slots {
		if p == nil {
			continue
		}
		q := &provider{idx: p.idx, uuid: p.uuid, name: p.name, gen: p.gen,
			traits: slices.Clone(p.traits), aggs: slices.Clone(p.aggs), inv: slices.Clone(p.inv),
			consumers: make([]*consumer, 0, len(p.consumers))}
		n.slots[i] = q
		n.providers[q.uuid] = q
		n.byName[q.name] = q
	}
	for _, p := range s.slots {
		if p != nil && p.parent != nil {
			q := n.slots[p.idx]
			q.parent = n.slots[p.parent.idx]
			q.parent.addChild(q)
		}
	}
	for id, c := range s.consumers {
		nc := &consumer{id: id, project: c.project, user: c.user, gen: c.gen, allocs: make([]holding, len(c.allocs))}
		for i, h := range c.allocs {
			nc.allocs[i] = holding{p: n.slots[h.p.idx], res: slices.Clone(h.res)}
		}
		n.consumers[id] = nc
	}
	for _, p := range s.slots {
		if p != nil {
			q := n.slots[p.idx]
			for _, c := range p.consumers {
				q.consumers = append(q.consumers, n.consumers[c.id])
			}
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
