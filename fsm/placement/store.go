package placement

import (
	"maps"
	"slices"
)

// Provider is a resource provider as callers see it. Slices are sorted and,
// like the map, owned by the caller.
type Provider struct {
	UUID       string `json:"uuid"`
	Name       string `json:"name"`
	ParentUUID string `json:"parent_provider_uuid,omitempty"`
	// RootUUID is the root of the provider's tree (itself for a root). It is
	// computed; CreateProvider ignores it.
	RootUUID string `json:"root_provider_uuid,omitempty"`
	// Generation is the provider's generation; CreateProvider ignores it.
	Generation  uint64               `json:"generation"`
	Traits      []string             `json:"traits,omitempty"`
	Aggregates  []string             `json:"aggregates,omitempty"`
	Inventories map[string]Inventory `json:"inventories,omitempty"`
}

// provider is the stored form of a resource provider.
type provider struct {
	idx        int32 // slot number, see index.go
	uuid, name string
	parent     *provider
	gen        uint64
	traits     []string // sorted set
	aggs       []string // sorted set
	inv        []slot   // sorted by class
	children   map[string]*provider
	consumers  []*consumer // consumers with allocations here, sorted by UUID
	// inv1 and cons1 hold inv and consumers while they have one element
	// (a node's provider: one class, one consumer): no allocation of
	// their own for 10^5 node providers.
	inv1  [1]slot
	cons1 [1]*consumer
}

// slot is one inventory with its current usage.
type slot struct {
	rc   string
	inv  Inventory
	cap  int64
	used int64
}

// slot returns the inventory of class rc, or nil. The pointer is valid
// until the provider's inventory set changes.
func (p *provider) slot(rc string) *slot {
	for i := range p.inv {
		if p.inv[i].rc == rc {
			return &p.inv[i]
		}
	}
	return nil
}

func (p *provider) root() *provider {
	for p.parent != nil {
		p = p.parent
	}
	return p
}

func (p *provider) export() Provider {
	out := Provider{
		UUID:       p.uuid,
		Name:       p.name,
		RootUUID:   p.root().uuid,
		Generation: p.gen,
		Traits:     slices.Clone(p.traits),
		Aggregates: slices.Clone(p.aggs),
	}
	if p.parent != nil {
		out.ParentUUID = p.parent.uuid
	}
	if len(p.inv) > 0 {
		out.Inventories = make(map[string]Inventory, len(p.inv))
		for _, sl := range p.inv {
			out.Inventories[sl.rc] = sl.inv
		}
	}
	return out
}

// Store holds every resource provider, inventory and allocation, with the
// indexes and usage totals derived from them. The zero value is not usable;
// call New.
type Store struct {
	providers map[string]*provider
	byName    map[string]*provider
	slots     []*provider // slot → provider, nil when free
	ids       []uuidKey   // slot → UUID key
	free      []int32     // free slots, reused last-in first-out
	live      posting     // every provider
	byRC      postings    // class → providers with inventory of it
	byFree    postings    // class → providers with at least one unit free
	byTrait   postings
	byAgg     postings
	consumers map[string]*consumer
	projects  map[string]map[string]int64 // project → class → usage
}

// New returns an empty store.
func New() *Store {
	return &Store{
		providers: make(map[string]*provider),
		byName:    make(map[string]*provider),
		byRC:      make(postings),
		byFree:    make(postings),
		byTrait:   make(postings),
		byAgg:     make(postings),
		consumers: make(map[string]*consumer),
		projects:  make(map[string]map[string]int64),
	}
}

// Len returns the number of resource providers.
func (s *Store) Len() int { return len(s.providers) }

func (s *Store) lookup(uuid string) (*provider, error) {
	c, ok := NormalizeUUID(uuid)
	if !ok {
		return nil, providerNotFound(uuid)
	}
	p := s.providers[c]
	if p == nil {
		return nil, providerNotFound(c)
	}
	return p, nil
}

// lookupGen finds a provider and checks the caller's generation.
func (s *Store) lookupGen(uuid string, gen uint64) (*provider, error) {
	p, err := s.lookup(uuid)
	if err != nil {
		return nil, err
	}
	if p.gen != gen {
		return nil, generationConflict(p, gen)
	}
	return p, nil
}

// Provider returns the provider with the given UUID.
func (s *Store) Provider(uuid string) (Provider, error) {
	p, err := s.lookup(uuid)
	if err != nil {
		return Provider{}, err
	}
	return p.export(), nil
}

// ProviderByName returns the provider with the given name.
func (s *Store) ProviderByName(name string) (Provider, error) {
	p := s.byName[name]
	if p == nil {
		return Provider{}, newErr(ErrNotFound, CodeProviderNotFound, "no resource provider named %q", name)
	}
	return p.export(), nil
}

// CreateProvider creates a provider at generation 0 from p's UUID, Name and
// ParentUUID, and, in the same step, its Traits, Aggregates and
// Inventories if given (so a node can be registered whole). The parent must
// exist. It returns the created provider.
func (s *Store) CreateProvider(p Provider) (Provider, error) {
	uuid, ok := NormalizeUUID(p.UUID)
	if !ok {
		return Provider{}, invalidf("invalid resource provider UUID %q", p.UUID)
	}
	if err := validName(p.Name); err != nil {
		return Provider{}, err
	}
	if old := s.providers[uuid]; old != nil {
		return Provider{}, newErr(ErrDuplicate, "",
			"resource provider %s already exists (named %q)", uuid, old.name)
	}
	if old := s.byName[p.Name]; old != nil {
		return Provider{}, newErr(ErrDuplicate, CodeDuplicateName,
			"a resource provider named %q already exists (uuid %s)", p.Name, old.uuid)
	}
	parent, err := s.parentFor(uuid, p.ParentUUID)
	if err != nil {
		return Provider{}, err
	}
	traits, err := validTraits(p.Traits)
	if err != nil {
		return Provider{}, err
	}
	aggs, err := normalizeUUIDs(p.Aggregates, "aggregate")
	if err != nil {
		return Provider{}, err
	}
	inv, err := validInventories(uuid, p.Inventories)
	if err != nil {
		return Provider{}, err
	}
	np := &provider{uuid: uuid, name: p.Name, parent: parent}
	s.insert(np)
	s.replaceTraits(np, traits)
	s.replaceAggregates(np, aggs)
	for _, rc := range sortedKeys(inv) {
		s.putInventory(np, rc, inv[rc])
	}
	return np.export(), nil
}

// insert links a new provider into the maps, its parent and the slots.
func (s *Store) insert(p *provider) {
	s.providers[p.uuid] = p
	s.byName[p.name] = p
	s.allocSlot(p)
	if p.parent != nil {
		p.parent.addChild(p)
	}
}

func (p *provider) addChild(c *provider) {
	if p.children == nil {
		p.children = make(map[string]*provider)
	}
	p.children[c.uuid] = c
}

// parentFor resolves a requested parent UUID for the provider uuid: it
// must exist and must not be uuid itself or one of its descendants.
func (s *Store) parentFor(uuid, parent string) (*provider, error) {
	if parent == "" {
		return nil, nil
	}
	pu, ok := NormalizeUUID(parent)
	if !ok {
		return nil, invalidf("invalid parent provider UUID %q", parent)
	}
	pp := s.providers[pu]
	if pp == nil {
		return nil, invalidf("parent provider %s of resource provider %s does not exist", pu, uuid)
	}
	for a := pp; a != nil; a = a.parent {
		if a.uuid == uuid {
			return nil, invalidf("making %s the parent of resource provider %s would create a loop "+
				"in the provider tree", pu, uuid)
		}
	}
	return pp, nil
}

// UpdateProvider renames and/or re-parents a provider (an empty parent makes
// it a root). The new parent must exist and not be the provider itself or one
// of its descendants.
func (s *Store) UpdateProvider(uuid string, gen uint64, name, parent string) (Provider, error) {
	p, err := s.lookupGen(uuid, gen)
	if err != nil {
		return Provider{}, err
	}
	if err := validName(name); err != nil {
		return Provider{}, err
	}
	if old := s.byName[name]; old != nil && old != p {
		return Provider{}, newErr(ErrDuplicate, CodeDuplicateName,
			"a resource provider named %q already exists (uuid %s)", name, old.uuid)
	}
	np, err := s.parentFor(p.uuid, parent)
	if err != nil {
		return Provider{}, err
	}
	delete(s.byName, p.name)
	p.name = name
	s.byName[name] = p
	if p.parent != nil {
		delete(p.parent.children, p.uuid)
	}
	p.parent = np
	if np != nil {
		np.addChild(p)
	}
	p.gen++
	return p.export(), nil
}

// DeleteProvider deletes a provider with its inventories, traits and
// aggregates. It fails with ErrInUse while the provider has children or
// allocations.
func (s *Store) DeleteProvider(uuid string, gen uint64) error {
	p, err := s.lookupGen(uuid, gen)
	if err != nil {
		return err
	}
	if len(p.children) > 0 {
		kids := sortedKeys(p.children)
		return newErr(ErrInUse, CodeCannotDelParent,
			"cannot delete resource provider %s (%s): it is the parent of %d provider(s), first %s; "+
				"delete or re-parent them first", p.uuid, p.name, len(kids), kids[0])
	}
	if len(p.consumers) > 0 {
		return newErr(ErrInUse, CodeProviderInUse,
			"cannot delete resource provider %s (%s): %d consumer(s) hold allocations against it, "+
				"first %s; remove their allocations first", p.uuid, p.name, len(p.consumers), p.consumers[0].id)
	}
	s.replaceTraits(p, nil)
	s.replaceAggregates(p, nil)
	for _, sl := range p.inv {
		s.byRC.del(sl.rc, p.idx)
		s.byFree.del(sl.rc, p.idx)
	}
	if p.parent != nil {
		delete(p.parent.children, p.uuid)
	}
	s.freeSlot(p)
	delete(s.byName, p.name)
	delete(s.providers, p.uuid)
	return nil
}

func validTraits(traits []string) ([]string, error) {
	out := slices.Clone(traits)
	for _, t := range out {
		if err := ValidateTrait(t); err != nil {
			return nil, err
		}
	}
	return sortedSet(out), nil
}

// SetTraits replaces the provider's traits.
func (s *Store) SetTraits(uuid string, gen uint64, traits []string) (Provider, error) {
	p, err := s.lookupGen(uuid, gen)
	if err != nil {
		return Provider{}, err
	}
	ts, err := validTraits(traits)
	if err != nil {
		return Provider{}, err
	}
	s.replaceTraits(p, ts)
	p.gen++
	return p.export(), nil
}

// SetAggregates replaces the provider's aggregates (UUIDs).
func (s *Store) SetAggregates(uuid string, gen uint64, aggregates []string) (Provider, error) {
	p, err := s.lookupGen(uuid, gen)
	if err != nil {
		return Provider{}, err
	}
	as, err := normalizeUUIDs(aggregates, "aggregate")
	if err != nil {
		return Provider{}, err
	}
	s.replaceAggregates(p, as)
	p.gen++
	return p.export(), nil
}

func (s *Store) replaceTraits(p *provider, traits []string) {
	for _, t := range p.traits {
		s.byTrait.del(t, p.idx)
	}
	p.traits = traits
	for i, t := range traits {
		traits[i] = s.byTrait.add(t, p.idx)
	}
}

func (s *Store) replaceAggregates(p *provider, aggs []string) {
	for _, a := range p.aggs {
		s.byAgg.del(a, p.idx)
	}
	p.aggs = aggs
	for i, a := range aggs {
		aggs[i] = s.byAgg.add(a, p.idx)
	}
}

// sortedKeys returns the keys of m in ascending order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
