package fsm

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Flavor is a Nova flavor.
type Flavor struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	VCPUs       int               `json:"vcpus"`
	RAM         int               `json:"ram"`       // MiB
	Disk        int               `json:"disk"`      // GiB
	Ephemeral   int               `json:"ephemeral"` // GiB
	Swap        int               `json:"swap"`      // MiB
	RxTxFactor  float64           `json:"rxtx_factor"`
	IsPublic    bool              `json:"is_public"`
	Description string            `json:"description,omitempty"`
	ExtraSpecs  map[string]string `json:"extra_specs,omitempty"` // nil when empty
	// Access lists the projects that may use a private flavor, sorted
	// (Nova's flavor access; see flavor_access.go).
	Access    []string  `json:"access,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// CreateFlavor adds a flavor. Its CreatedAt and UpdatedAt are set to At.
type CreateFlavor struct {
	Meta
	Flavor Flavor `json:"flavor"`
}

// Type implements Command.
func (*CreateFlavor) Type() CommandType { return CmdCreateFlavor }

// DeleteFlavor removes a flavor.
type DeleteFlavor struct {
	Meta
	ID string `json:"id"`
}

// Type implements Command.
func (*DeleteFlavor) Type() CommandType { return CmdDeleteFlavor }

// SetFlavorExtraSpecs merges Specs into a flavor's extra specs.
type SetFlavorExtraSpecs struct {
	Meta
	ID    string            `json:"id"`
	Specs map[string]string `json:"extra_specs"`
}

// Type implements Command.
func (*SetFlavorExtraSpecs) Type() CommandType { return CmdSetFlavorExtraSpecs }

// DeleteFlavorExtraSpec removes one extra spec from a flavor.
type DeleteFlavorExtraSpec struct {
	Meta
	ID  string `json:"id"`
	Key string `json:"key"`
}

// Type implements Command.
func (*DeleteFlavorExtraSpec) Type() CommandType { return CmdDeleteFlavorExtraSpec }

func init() {
	register[CreateFlavor](CmdCreateFlavor, "CreateFlavor", applyCreateFlavor)
	register[DeleteFlavor](CmdDeleteFlavor, "DeleteFlavor", applyDeleteFlavor)
	register[SetFlavorExtraSpecs](CmdSetFlavorExtraSpecs, "SetFlavorExtraSpecs", applySetFlavorExtraSpecs)
	register[DeleteFlavorExtraSpec](CmdDeleteFlavorExtraSpec, "DeleteFlavorExtraSpec", applyDeleteFlavorExtraSpec)
	registerRecord(RecordFlavor, recordSpec{
		name:  "flavor",
		write: writeFlavorRecords,
		load:  loadFlavorRecord,
	})
}

// Flavor limits.
const (
	MaxFlavorIDLen          = 255
	MaxFlavorNameLen        = 255
	MaxFlavorDescriptionLen = 65535
	MaxFlavorSize           = math.MaxInt32 // upper bound of vcpus, ram, disk, ephemeral and swap
	MaxExtraSpecKeyLen      = 255
	MaxExtraSpecValueLen    = 255
)

// NormalizeFlavor fills defaults in place: a zero RxTxFactor becomes 1.0 and
// empty ExtraSpecs become nil. Call it before ValidateFlavor.
func NormalizeFlavor(f *Flavor) {
	if f.RxTxFactor == 0 {
		f.RxTxFactor = 1.0
	}
	if len(f.ExtraSpecs) == 0 {
		f.ExtraSpecs = nil
	}
}

// ValidateFlavor checks a normalized flavor's fields, under the bounds
// of text.go. Errors wrap ErrInvalid.
func ValidateFlavor(f Flavor) error { return validateFlavor(f, true) }

// validateFlavor is ValidateFlavor; without bounded, as entries that do
// not carry Meta.Bounded were applied.
func validateFlavor(f Flavor, bounded bool) error {
	switch {
	case f.ID == "":
		return fmt.Errorf("%w: flavor ID is empty: give the flavor an ID", ErrInvalid)
	case utf8.RuneCountInString(f.ID) > MaxFlavorIDLen:
		return fmt.Errorf("%w: flavor ID is longer than %d characters", ErrInvalid, MaxFlavorIDLen)
	case strings.Contains(f.ID, "/"):
		return fmt.Errorf("%w: flavor ID %q contains '/': choose an ID without slashes", ErrInvalid, f.ID)
	case f.Name == "":
		return fmt.Errorf("%w: flavor name is empty: give the flavor a name", ErrInvalid)
	case utf8.RuneCountInString(f.Name) > MaxFlavorNameLen:
		return fmt.Errorf("%w: flavor name is longer than %d characters", ErrInvalid, MaxFlavorNameLen)
	case strings.TrimFunc(f.Name, unicode.IsSpace) != f.Name:
		return fmt.Errorf("%w: flavor name %q has leading or trailing whitespace: remove it", ErrInvalid, f.Name)
	case utf8.RuneCountInString(f.Description) > MaxFlavorDescriptionLen:
		return fmt.Errorf("%w: flavor description is longer than %d characters", ErrInvalid, MaxFlavorDescriptionLen)
	}
	if bounded {
		if err := checkFlavorText(f); err != nil {
			return err
		}
		if err := CheckName("flavor name", f.Name); err != nil {
			return err
		}
	}
	sizes := []struct {
		name  string
		value int
		min   int
	}{
		{"vcpus", f.VCPUs, 1},
		{"ram", f.RAM, 1},
		{"disk", f.Disk, 0},
		{"ephemeral", f.Ephemeral, 0},
		{"swap", f.Swap, 0},
	}
	for _, s := range sizes {
		if s.value < s.min || s.value > MaxFlavorSize {
			return fmt.Errorf("%w: flavor %s is %d: use a whole number from %d to %d", ErrInvalid, s.name, s.value, s.min, MaxFlavorSize)
		}
	}
	if !(f.RxTxFactor > 0) || math.IsInf(f.RxTxFactor, 0) {
		return fmt.Errorf("%w: flavor rxtx_factor is %v: use a finite number greater than 0", ErrInvalid, f.RxTxFactor)
	}
	if bounded && f.RxTxFactor > MaxRxTxFactor {
		return fmt.Errorf("%w: flavor rxtx_factor is %v: use a number greater than 0, at most %g", ErrInvalid, f.RxTxFactor, MaxRxTxFactor)
	}
	return validateExtraSpecs(f.ExtraSpecs, bounded)
}

// ValidateExtraSpecs checks extra spec keys (1 to 255 characters of letters,
// digits, '_', ':', '.', ' ' and '-') and values (at most 255 characters,
// under the bounds of text.go), at most MaxExtraSpecs of them. Keys are
// checked in sorted order, so the error is the same on every peer.
func ValidateExtraSpecs(specs map[string]string) error { return validateExtraSpecs(specs, true) }

func validateExtraSpecs(specs map[string]string, bounded bool) error {
	if bounded && len(specs) > MaxExtraSpecs {
		return fmt.Errorf("%w: %d extra specs: a flavor has at most %d", ErrInvalid, len(specs), MaxExtraSpecs)
	}
	for _, k := range sortedKeys(specs) {
		if err := validateExtraSpecKey(k); err != nil {
			return err
		}
		if n := utf8.RuneCountInString(specs[k]); n > MaxExtraSpecValueLen {
			return fmt.Errorf("%w: extra spec %q has a value of %d characters: use at most %d", ErrInvalid, k, n, MaxExtraSpecValueLen)
		}
		if !bounded {
			continue
		}
		if err := CheckText(fmt.Sprintf("extra spec %q", k), specs[k], MaxExtraSpecValueLen, true); err != nil {
			return err
		}
	}
	return nil
}

func validateExtraSpecKey(k string) error {
	if k == "" {
		return fmt.Errorf("%w: extra spec key is empty", ErrInvalid)
	}
	if len(k) > MaxExtraSpecKeyLen {
		return fmt.Errorf("%w: extra spec key %q is longer than %d characters", ErrInvalid, k, MaxExtraSpecKeyLen)
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == ':' || c == '.' || c == ' ' || c == '-'
		if !ok {
			return fmt.Errorf("%w: extra spec key %q contains %q: use only letters, digits, '_', ':', '.', ' ' and '-'", ErrInvalid, k, c)
		}
	}
	return nil
}

func cloneFlavor(f Flavor) Flavor {
	f.ExtraSpecs = maps.Clone(f.ExtraSpecs)
	if len(f.ExtraSpecs) == 0 {
		f.ExtraSpecs = nil
	}
	f.Access = slices.Clone(f.Access)
	return f
}

func errFlavorNotFound(id string) error {
	return fmt.Errorf("%w: flavor %s does not exist: list flavors to see the existing IDs", ErrNotFound, id)
}

func applyCreateFlavor(st *state, c *CreateFlavor) (any, error) {
	f := cloneFlavor(c.Flavor)
	NormalizeFlavor(&f)
	if err := validateFlavor(f, c.Bounded); err != nil {
		return nil, err
	}
	if _, dup := st.flavors[f.ID]; dup {
		return nil, fmt.Errorf("%w: flavor with ID %s already exists", ErrConflict, f.ID)
	}
	if _, dup := st.flavorNames[f.Name]; dup {
		return nil, fmt.Errorf("%w: flavor with name %s already exists", ErrConflict, f.Name)
	}
	at := c.At.UTC()
	f.CreatedAt, f.UpdatedAt = at, at
	st.flavors[f.ID] = f
	st.flavorNames[f.Name] = f.ID
	return cloneFlavor(f), nil
}

func applyDeleteFlavor(st *state, c *DeleteFlavor) (any, error) {
	f, ok := st.flavors[c.ID]
	if !ok {
		return nil, errFlavorNotFound(c.ID)
	}
	delete(st.flavors, f.ID)
	delete(st.flavorNames, f.Name)
	return cloneFlavor(f), nil
}

func applySetFlavorExtraSpecs(st *state, c *SetFlavorExtraSpecs) (any, error) {
	f, ok := st.flavors[c.ID]
	if !ok {
		return nil, errFlavorNotFound(c.ID)
	}
	if err := validateExtraSpecs(c.Specs, c.Bounded); err != nil {
		return nil, err
	}
	specs := maps.Clone(f.ExtraSpecs)
	if specs == nil {
		specs = make(map[string]string, len(c.Specs))
	}
	maps.Copy(specs, c.Specs)
	if c.Bounded && len(specs) > MaxExtraSpecs {
		return nil, fmt.Errorf("%w: flavor %s would have %d extra specs: a flavor has at most %d", ErrInvalid, c.ID, len(specs), MaxExtraSpecs)
	}
	f.ExtraSpecs = specs
	if len(f.ExtraSpecs) == 0 {
		f.ExtraSpecs = nil
	}
	f.UpdatedAt = c.At.UTC()
	st.flavors[f.ID] = f
	return cloneFlavor(f), nil
}

func applyDeleteFlavorExtraSpec(st *state, c *DeleteFlavorExtraSpec) (any, error) {
	f, ok := st.flavors[c.ID]
	if !ok {
		return nil, errFlavorNotFound(c.ID)
	}
	if _, ok := f.ExtraSpecs[c.Key]; !ok {
		return nil, fmt.Errorf("%w: flavor %s has no extra spec %q", ErrNotFound, c.ID, c.Key)
	}
	specs := maps.Clone(f.ExtraSpecs)
	delete(specs, c.Key)
	f.ExtraSpecs = specs
	if len(specs) == 0 {
		f.ExtraSpecs = nil
	}
	f.UpdatedAt = c.At.UTC()
	st.flavors[f.ID] = f
	return cloneFlavor(f), nil
}

func writeFlavorRecords(st *state, emit func(v any) error) error {
	for _, id := range sortedKeys(st.flavors) {
		if err := emit(st.flavors[id]); err != nil {
			return err
		}
	}
	return nil
}

func loadFlavorRecord(st *state, body []byte) error {
	var f Flavor
	if err := json.Unmarshal(body, &f); err != nil {
		return err
	}
	if f.ID == "" {
		return fmt.Errorf("flavor record has no ID")
	}
	if _, dup := st.flavors[f.ID]; dup {
		return fmt.Errorf("flavor ID %s appears twice", f.ID)
	}
	if other, dup := st.flavorNames[f.Name]; dup {
		return fmt.Errorf("flavor name %s is used by both %s and %s", f.Name, other, f.ID)
	}
	f = cloneFlavor(f)
	st.flavors[f.ID] = f
	st.flavorNames[f.Name] = f.ID
	return nil
}

// Flavors returns every flavor, sorted by ID.
func (s *Store) Flavors() []Flavor {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Flavor, 0, len(s.st.flavors))
	for _, f := range s.st.flavors {
		out = append(out, cloneFlavor(f))
	}
	slices.SortFunc(out, func(a, b Flavor) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Flavor returns the flavor with the given ID or an error wrapping ErrNotFound.
func (s *Store) Flavor(id string) (Flavor, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f, ok := s.st.flavors[id]
	if !ok {
		return Flavor{}, errFlavorNotFound(id)
	}
	return cloneFlavor(f), nil
}

// FlavorByName returns the flavor with the given name or an error wrapping
// ErrNotFound.
func (s *Store) FlavorByName(name string) (Flavor, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	id, ok := s.st.flavorNames[name]
	if !ok {
		return Flavor{}, fmt.Errorf("%w: no flavor is named %s: list flavors to see the existing names", ErrNotFound, name)
	}
	return cloneFlavor(s.st.flavors[id]), nil
}
