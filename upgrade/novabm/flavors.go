package novabm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/corral-dev/corral/wire"
)

// FlavorOptions select and shape the flavor update.
type FlavorOptions struct {
	DeployKernel, DeployRamdisk string // Ironic's deploy images (required)
	ResourceClass               string // Ironic resource class (default "baremetal")
	All                         bool   // every bare-metal flavor
	Flavors                     []string
	// Import are nova's flavors: the bare-metal ones corral lacks are
	// created first, with the same id.
	Import []NovaFlavor
}

// FlavorChange is what happens to one flavor.
type FlavorChange struct {
	ID, Name string
	Create   *NovaFlavor       // imported from nova first
	Set      map[string]string // extra specs to set; empty: unchanged
	Skip     string            // why the flavor is left alone
}

// isBareMetal reports whether a flavor is one of the old driver's: it
// names deploy images.
func isBareMetal(specs map[string]string) bool {
	return specs[SpecDeployKernel] != "" || specs[SpecDeployRamdisk] != ""
}

// PlanFlavorUpdate decides the change of every selected flavor. It has no
// side effects.
func PlanFlavorUpdate(current []wire.Flavor, o FlavorOptions) ([]FlavorChange, error) {
	if o.ResourceClass == "" {
		o.ResourceClass = DefaultResourceClass
	}
	byID := map[string]wire.Flavor{}
	byName := map[string]wire.Flavor{}
	for _, f := range current {
		byID[f.ID] = f
		byName[f.Name] = f
	}
	var changes []FlavorChange
	imported := map[string]bool{}
	for _, nf := range o.Import {
		if nf.Deleted || !isBareMetal(nf.ExtraSpecs) {
			continue
		}
		if _, ok := byID[nf.FlavorID]; ok {
			continue
		}
		if other, ok := byName[nf.Name]; ok {
			changes = append(changes, FlavorChange{ID: nf.FlavorID, Name: nf.Name,
				Skip: fmt.Sprintf("corral flavor %s is already named %q: rename one of them and run again", other.ID, nf.Name)})
			continue
		}
		f := nf
		cf := wire.Flavor{ID: f.FlavorID, Name: f.Name, ExtraSpecs: map[string]string{}}
		for k, v := range f.ExtraSpecs {
			cf.ExtraSpecs[k] = v
		}
		byID[cf.ID], byName[cf.Name] = cf, cf
		current = append(current, cf)
		imported[cf.ID] = true
		changes = append(changes, FlavorChange{ID: cf.ID, Name: cf.Name, Create: &f})
	}
	var selected []wire.Flavor
	if o.All {
		for _, f := range current {
			if isBareMetal(f.ExtraSpecs) {
				selected = append(selected, f)
			}
		}
	}
	for _, want := range o.Flavors {
		f, ok := byID[want]
		if !ok {
			f, ok = byName[want]
		}
		if !ok {
			return nil, fmt.Errorf("%w: %q is neither the id nor the name of a flavor (import nova's with --nova-db)", ErrNoSuchFlavor, want)
		}
		selected = append(selected, f)
	}
	desired := BareMetalSpecs(o.ResourceClass, o.DeployKernel, o.DeployRamdisk)
	seen := map[string]bool{}
	for _, f := range selected {
		if seen[f.ID] {
			continue
		}
		seen[f.ID] = true
		set := map[string]string{}
		for k, v := range desired {
			if f.ExtraSpecs[k] != v {
				set[k] = v
			}
		}
		if imported[f.ID] {
			// An imported flavor also gets the specs it had in nova.
			for k, v := range f.ExtraSpecs {
				if _, over := desired[k]; !over {
					set[k] = v
				}
			}
		}
		found := false
		for i := range changes {
			if changes[i].ID == f.ID {
				changes[i].Set, found = set, true
			}
		}
		if !found {
			changes = append(changes, FlavorChange{ID: f.ID, Name: f.Name, Set: set})
		}
	}
	return changes, nil
}

// FlavorResult is the outcome of one flavor change.
type FlavorResult struct {
	Change  FlavorChange
	Outcome string // Created (changed), Unchanged, Failed, or "skipped"
	Err     error
}

// ApplyFlavorUpdate carries the changes out, flavor by flavor.
func ApplyFlavorUpdate(ctx context.Context, st FlavorStore, changes []FlavorChange) []FlavorResult {
	out := make([]FlavorResult, 0, len(changes))
	for _, c := range changes {
		r := FlavorResult{Change: c, Outcome: Unchanged}
		switch {
		case c.Skip != "":
			r.Outcome, r.Err = "skipped", errors.New(c.Skip)
		default:
			if c.Create != nil {
				if err := st.CreateFlavor(ctx, *c.Create); err != nil && !strings.Contains(err.Error(), "already exists") {
					r.Outcome, r.Err = Failed, fmt.Errorf("create flavor %s: %w", c.ID, err)
					break
				}
				r.Outcome = Created
			}
			if len(c.Set) > 0 {
				if err := st.SetExtraSpecs(ctx, c.ID, c.Set); err != nil {
					r.Outcome, r.Err = Failed, fmt.Errorf("extra specs of flavor %s: %w", c.ID, err)
					break
				}
				r.Outcome = Created
			}
		}
		out = append(out, r)
	}
	return out
}
