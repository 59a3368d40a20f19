package fsm

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestValidationLeavesStateUnchanged(t *testing.T) {
	a := newApplier(t)
	a.ok(&RegisterHost{Meta: at(1), Name: "n1"})
	a.ok(&CreateFlavor{Meta: at(1), Flavor: testFlavor("f1", "small")})
	a.ok(&SetFlavorExtraSpecs{Meta: at(1), ID: "f1", Specs: map[string]string{"k": "v"}})

	with := func(mod func(*Flavor)) Command {
		f := testFlavor("f2", "medium")
		mod(&f)
		return &CreateFlavor{Meta: at(2), Flavor: f}
	}
	cases := []struct {
		name string
		cmd  Command
		want error
	}{
		{"empty id", with(func(f *Flavor) { f.ID = "" }), ErrInvalid},
		{"long id", with(func(f *Flavor) { f.ID = strings.Repeat("x", 256) }), ErrInvalid},
		{"slash in id", with(func(f *Flavor) { f.ID = "a/b" }), ErrInvalid},
		{"empty name", with(func(f *Flavor) { f.Name = "" }), ErrInvalid},
		{"long name", with(func(f *Flavor) { f.Name = strings.Repeat("n", 256) }), ErrInvalid},
		{"leading space", with(func(f *Flavor) { f.Name = " medium" }), ErrInvalid},
		{"trailing space", with(func(f *Flavor) { f.Name = "medium\t" }), ErrInvalid},
		{"zero vcpus", with(func(f *Flavor) { f.VCPUs = 0 }), ErrInvalid},
		{"negative vcpus", with(func(f *Flavor) { f.VCPUs = -1 }), ErrInvalid},
		{"huge vcpus", with(func(f *Flavor) { f.VCPUs = math.MaxInt32 + 1 }), ErrInvalid},
		{"zero ram", with(func(f *Flavor) { f.RAM = 0 }), ErrInvalid},
		{"negative disk", with(func(f *Flavor) { f.Disk = -1 }), ErrInvalid},
		{"negative ephemeral", with(func(f *Flavor) { f.Ephemeral = -1 }), ErrInvalid},
		{"negative swap", with(func(f *Flavor) { f.Swap = -1 }), ErrInvalid},
		{"negative rxtx", with(func(f *Flavor) { f.RxTxFactor = -0.5 }), ErrInvalid},
		{"bad spec key", with(func(f *Flavor) { f.ExtraSpecs = map[string]string{"a/b": "1"} }), ErrInvalid},
		{"empty spec key", with(func(f *Flavor) { f.ExtraSpecs = map[string]string{"": "1"} }), ErrInvalid},
		{"long spec key", with(func(f *Flavor) { f.ExtraSpecs = map[string]string{strings.Repeat("k", 256): "1"} }), ErrInvalid},
		{"long spec value", with(func(f *Flavor) { f.ExtraSpecs = map[string]string{"k": strings.Repeat("v", 256)} }), ErrInvalid},
		{"dup id", with(func(f *Flavor) { f.ID = "f1" }), ErrConflict},
		{"dup name", with(func(f *Flavor) { f.Name = "small" }), ErrConflict},
		{"set specs bad key", &SetFlavorExtraSpecs{Meta: at(2), ID: "f1", Specs: map[string]string{"ok": "1", "bad!": "1"}}, ErrInvalid},
		{"set specs missing flavor", &SetFlavorExtraSpecs{Meta: at(2), ID: "nope", Specs: map[string]string{"k": "1"}}, ErrNotFound},
		{"delete spec missing key", &DeleteFlavorExtraSpec{Meta: at(2), ID: "f1", Key: "nope"}, ErrNotFound},
		{"delete spec missing flavor", &DeleteFlavorExtraSpec{Meta: at(2), ID: "nope", Key: "k"}, ErrNotFound},
		{"delete missing flavor", &DeleteFlavor{Meta: at(2), ID: "nope"}, ErrNotFound},
		{"host empty name", &RegisterHost{Meta: at(2), Name: ""}, ErrInvalid},
		{"host bad name", &RegisterHost{Meta: at(2), Name: "n 1"}, ErrInvalid},
		{"host leading dash", &RegisterHost{Meta: at(2), Name: "-n1"}, ErrInvalid},
		{"host bad kind", &RegisterHost{Meta: at(2), Name: "n1", Kind: "vm"}, ErrInvalid},
		{"status unknown", &SetHostStatus{Meta: at(2), Name: "n1", Status: "gone"}, ErrInvalid},
		{"status missing host", &SetHostStatus{Meta: at(2), Name: "n2", Status: HostDown}, ErrNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := a.s.Digest()
			r := a.apply(tc.cmd)
			if !errors.Is(r.Err, tc.want) {
				t.Fatalf("err = %v, want %v", r.Err, tc.want)
			}
			if r.Value != nil {
				t.Fatalf("value %v returned with an error", r.Value)
			}
			if a.s.Digest() != before {
				t.Fatal("state changed")
			}
			if a.s.AppliedIndex() != a.index {
				t.Fatalf("applied index %d, want %d", a.s.AppliedIndex(), a.index)
			}
		})
	}
}

func TestConflictMessages(t *testing.T) {
	a := newApplier(t)
	a.ok(&CreateFlavor{Meta: at(1), Flavor: testFlavor("f1", "small")})
	r := a.apply(&CreateFlavor{Meta: at(2), Flavor: testFlavor("f1", "other")})
	if !strings.Contains(r.Err.Error(), "flavor with ID f1 already exists") {
		t.Errorf("dup id message: %v", r.Err)
	}
	r = a.apply(&CreateFlavor{Meta: at(2), Flavor: testFlavor("f2", "small")})
	if !strings.Contains(r.Err.Error(), "flavor with name small already exists") {
		t.Errorf("dup name message: %v", r.Err)
	}
}

func TestNormalizeAndValidateFlavor(t *testing.T) {
	f := testFlavor("f", "n")
	if err := ValidateFlavor(f); !errors.Is(err, ErrInvalid) {
		t.Fatalf("rxtx 0 before normalising = %v, want ErrInvalid", err)
	}
	NormalizeFlavor(&f)
	if f.RxTxFactor != 1.0 {
		t.Fatalf("rxtx after normalising = %v", f.RxTxFactor)
	}
	if err := ValidateFlavor(f); err != nil {
		t.Fatalf("valid flavor: %v", err)
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), -1} {
		g := f
		g.RxTxFactor = v
		if err := ValidateFlavor(g); !errors.Is(err, ErrInvalid) {
			t.Errorf("rxtx %v = %v, want ErrInvalid", v, err)
		}
	}
	g := f
	g.Name = strings.Repeat("é", 255) // characters, not bytes
	if err := ValidateFlavor(g); err != nil {
		t.Errorf("255-character name: %v", err)
	}
	if err := ValidateExtraSpecs(map[string]string{"hw:cpu_policy": "dedicated", "a b.c-d_e": ""}); err != nil {
		t.Errorf("valid specs: %v", err)
	}
	// The reported key does not depend on map order.
	specs := map[string]string{"z!": "", "a!": "", "m!": ""}
	for range 20 {
		if err := ValidateExtraSpecs(specs); !strings.Contains(err.Error(), `"a!"`) {
			t.Fatalf("error names another key: %v", err)
		}
	}
}
