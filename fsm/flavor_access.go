package fsm

import (
	"fmt"
	"slices"
	"unicode/utf8"
)

// UpdateFlavor changes a flavor's description (the one field Nova lets
// change, from compute microversion 2.55). Servers keep the copy of the
// flavor they were created with.
type UpdateFlavor struct {
	Meta
	ID          string `json:"id"`
	Description string `json:"description"`
}

// Type implements Command.
func (*UpdateFlavor) Type() CommandType { return CmdUpdateFlavor }

// SetFlavorAccess gives a project access to a private flavor (Add) or
// takes it away.
type SetFlavorAccess struct {
	Meta
	ID      string `json:"id"`
	Project string `json:"project"`
	Add     bool   `json:"add"`
}

// Type implements Command.
func (*SetFlavorAccess) Type() CommandType { return CmdSetFlavorAccess }

func init() {
	register[UpdateFlavor](CmdUpdateFlavor, "UpdateFlavor", applyUpdateFlavor)
	register[SetFlavorAccess](CmdSetFlavorAccess, "SetFlavorAccess", applySetFlavorAccess)
}

// maxProjectIDLen bounds project ids (Keystone's are 64 characters at most).
const maxProjectIDLen = 255

func applyUpdateFlavor(st *state, c *UpdateFlavor) (any, error) {
	f, ok := st.flavors[c.ID]
	if !ok {
		return nil, errFlavorNotFound(c.ID)
	}
	if utf8.RuneCountInString(c.Description) > MaxFlavorDescriptionLen {
		return nil, fmt.Errorf("%w: flavor description is longer than %d characters", ErrInvalid, MaxFlavorDescriptionLen)
	}
	if c.Bounded {
		if err := CheckText("flavor description", c.Description, MaxFlavorDescriptionLen, true); err != nil {
			return nil, err
		}
	}
	f = cloneFlavor(f)
	f.Description = c.Description
	f.UpdatedAt = c.At.UTC()
	st.flavors[f.ID] = f
	return cloneFlavor(f), nil
}

func applySetFlavorAccess(st *state, c *SetFlavorAccess) (any, error) {
	f, ok := st.flavors[c.ID]
	if !ok {
		return nil, errFlavorNotFound(c.ID)
	}
	if c.Project == "" || len(c.Project) > maxProjectIDLen {
		return nil, fmt.Errorf("%w: a project id is 1 to %d characters", ErrInvalid, maxProjectIDLen)
	}
	if c.Bounded {
		if err := CheckText("project id", c.Project, maxProjectIDLen, false); err != nil {
			return nil, err
		}
	}
	i, has := slices.BinarySearch(f.Access, c.Project)
	switch {
	case f.IsPublic:
		return nil, fmt.Errorf("%w: flavor %s is public: every project may use it; access lists are for private flavors", ErrConflict, c.ID)
	case c.Add && has:
		return nil, fmt.Errorf("%w: Flavor access already exists for flavor %s and project %s combination.", ErrConflict, c.ID, c.Project)
	case !c.Add && !has:
		return nil, fmt.Errorf("%w: Flavor access not found for %s / %s combination.", ErrNotFound, c.ID, c.Project)
	}
	f = cloneFlavor(f)
	if c.Add {
		f.Access = slices.Insert(f.Access, i, c.Project)
	} else {
		f.Access = slices.Delete(f.Access, i, i+1)
		if len(f.Access) == 0 {
			f.Access = nil
		}
	}
	f.UpdatedAt = c.At.UTC()
	st.flavors[f.ID] = f
	return cloneFlavor(f), nil
}

// MayUse reports whether project may use the flavor: public flavors are
// everyone's, private ones their access list's.
func (f Flavor) MayUse(project string) bool {
	if f.IsPublic {
		return true
	}
	_, ok := slices.BinarySearch(f.Access, project)
	return ok
}
