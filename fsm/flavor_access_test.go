package fsm

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestUpdateFlavorDescription(t *testing.T) {
	a := newApplier(t)
	a.ok(&CreateFlavor{Meta: at(0), Flavor: testFlavor("f1", "small")})
	a.ok(&UpdateFlavor{Meta: at(5), ID: "f1", Description: "two GPUs"})
	f, err := a.s.Flavor("f1")
	if err != nil || f.Description != "two GPUs" || !f.UpdatedAt.Equal(t0.Add(5e9)) {
		t.Fatalf("after update: %+v, %v", f, err)
	}
	before := a.s.Digest()
	for _, c := range []*UpdateFlavor{{ID: "nope", Description: "x"}, {ID: "f1", Description: strings.Repeat("x", MaxFlavorDescriptionLen+1)}} {
		if r := a.apply(c); r.Err == nil {
			t.Errorf("update %s accepted", c.ID)
		}
	}
	if a.s.Digest() != before {
		t.Fatal("a rejected update changed the state")
	}
	a.ok(&UpdateFlavor{Meta: at(6), ID: "f1"})
	if f, _ := a.s.Flavor("f1"); f.Description != "" {
		t.Fatalf("an empty description must clear it: %+v", f)
	}
}

func TestSetFlavorAccess(t *testing.T) {
	a := newApplier(t)
	priv := testFlavor("f2", "private")
	priv.IsPublic = false
	a.ok(&CreateFlavor{Meta: at(0), Flavor: testFlavor("f1", "public")})
	a.ok(&CreateFlavor{Meta: at(0), Flavor: priv})
	a.ok(&SetFlavorAccess{Meta: at(1), ID: "f2", Project: "p2", Add: true})
	a.ok(&SetFlavorAccess{Meta: at(2), ID: "f2", Project: "p1", Add: true})
	f, _ := a.s.Flavor("f2")
	if !slices.Equal(f.Access, []string{"p1", "p2"}) || !f.MayUse("p1") || f.MayUse("p3") {
		t.Fatalf("access %v", f.Access)
	}
	if pub, _ := a.s.Flavor("f1"); !pub.MayUse("anyone") {
		t.Fatal("a public flavor is everyone's")
	}
	before := a.s.Digest()
	for _, tc := range []struct {
		c    *SetFlavorAccess
		want error
	}{
		{&SetFlavorAccess{ID: "f1", Project: "p1", Add: true}, ErrConflict},
		{&SetFlavorAccess{ID: "f2", Project: "p1", Add: true}, ErrConflict},
		{&SetFlavorAccess{ID: "f2", Project: "p9"}, ErrNotFound},
		{&SetFlavorAccess{ID: "f9", Project: "p1", Add: true}, ErrNotFound},
		{&SetFlavorAccess{ID: "f2", Project: "", Add: true}, ErrInvalid},
	} {
		if r := a.apply(tc.c); !errors.Is(r.Err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.c, r.Err, tc.want)
		}
	}
	if a.s.Digest() != before {
		t.Fatal("a rejected access change changed the state")
	}
	a.ok(&SetFlavorAccess{Meta: at(3), ID: "f2", Project: "p1"})
	a.ok(&SetFlavorAccess{Meta: at(4), ID: "f2", Project: "p2"})
	if f, _ := a.s.Flavor("f2"); f.Access != nil || f.MayUse("p1") {
		t.Fatalf("after removing both: %v", f.Access)
	}
}
