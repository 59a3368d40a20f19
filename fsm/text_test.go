package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// bounded is at(sec) with Meta.Bounded, as the leader stamps it.
func bounded(sec int) Meta {
	m := at(sec)
	m.Bounded = true
	return m
}

// withBounded sets Meta.Bounded on c, and on none of its servers (a
// batch's entry carries it for all of them).
func withBounded(c Command, on bool) Command {
	c.Header().Bounded = on
	return c
}

// manyItems is n metadata items or extra specs.
func manyItems(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("k%04d", i)] = "v"
	}
	return m
}

// manyNets is n requested networks.
func manyNets(n int) []Network {
	out := make([]Network, n)
	for i := range out {
		out[i] = Network{UUID: "6f1c2a70-0000-4000-8000-0000000000aa"}
	}
	return out
}

// absurdCommands are commands holding text no field may hold, or sizes
// no server or flavor may have, against serverFixture with the flavors
// f1 (public) and priv (private) and the server s1.
func absurdCommands() []struct {
	name string
	cmd  Command
} {
	boot := func(mod func(*CreateServer)) Command {
		c := &CreateServer{Meta: at(2), ID: "s2", Name: "db", FlavorID: "gold", ImageRef: "img", Host: "h1"}
		mod(c)
		return c
	}
	flavor := func(mod func(*Flavor)) Command {
		f := testFlavor("f2", "medium")
		mod(&f)
		return &CreateFlavor{Meta: at(2), Flavor: f}
	}
	long := strings.Repeat("x", 256)
	cases := []struct {
		name string
		cmd  Command
	}{
		{"server name with NUL", boot(func(c *CreateServer) { c.Name = "a\x00b" })},
		{"server name with CR LF", boot(func(c *CreateServer) { c.Name = "a\r\nb" })},
		{"server name with a bidi override", boot(func(c *CreateServer) { c.Name = "a\u202eb" })},
		{"server name of 256 characters", boot(func(c *CreateServer) { c.Name = strings.Repeat("é", 256) })},
		{"imageRef of 1 MB", boot(func(c *CreateServer) { c.ImageRef = strings.Repeat("i", 1<<20) })},
		{"imageRef with a newline", boot(func(c *CreateServer) { c.ImageRef = "http://i/a\nb" })},
		{"flavor id of 1 MB", boot(func(c *CreateServer) { c.FlavorID = strings.Repeat("f", 1<<20) })},
		{"20,000 metadata items", boot(func(c *CreateServer) { c.Metadata = manyItems(20000) })},
		{"metadata key of 1 MB", boot(func(c *CreateServer) { c.Metadata = map[string]string{strings.Repeat("k", 1<<20): "v"} })},
		{"metadata value of 1 MB", boot(func(c *CreateServer) { c.Metadata = map[string]string{"k": strings.Repeat("v", 1<<20)} })},
		{"metadata key empty", boot(func(c *CreateServer) { c.Metadata = map[string]string{"": "v"} })},
		{"metadata key with a tab", boot(func(c *CreateServer) { c.Metadata = map[string]string{"a\tb": "v"} })},
		{"metadata value with NUL", boot(func(c *CreateServer) { c.Metadata = map[string]string{"k": "\x00"} })},
		{"10,000 networks", boot(func(c *CreateServer) { c.Networks = manyNets(10000) })},
		{"network uuid with NUL", boot(func(c *CreateServer) { c.Networks = []Network{{UUID: "n\x00"}} })},
		{"key name with NUL", boot(func(c *CreateServer) { c.KeyName = "k\x00" })},
		{"batch with a bad server", &CreateServers{Meta: at(2), Servers: []CreateServer{{ID: "s3", Name: "a\x00", FlavorID: "gold", ImageRef: "img", Host: "h1"}}}},
		{"flavor name with NUL", flavor(func(f *Flavor) { f.Name = "a\x00" })},
		{"flavor name with a bidi isolate", flavor(func(f *Flavor) { f.Name = "a\u2067b" })},
		{"flavor id with CR", flavor(func(f *Flavor) { f.ID = "a\rb" })},
		{"flavor description with NUL", flavor(func(f *Flavor) { f.Description = "a\x00" })},
		{"rxtx_factor 1e308", flavor(func(f *Flavor) { f.RxTxFactor = 1e308 })},
		{"20,000 extra specs", flavor(func(f *Flavor) { f.ExtraSpecs = manyItems(20000) })},
		{"extra spec value with NUL", flavor(func(f *Flavor) { f.ExtraSpecs = map[string]string{"k": "\x00"} })},
		{"extra specs merged beyond the bound", &SetFlavorExtraSpecs{Meta: at(2), ID: "f1", Specs: manyItems(MaxExtraSpecs + 1)}},
		{"extra spec set with a bidi override", &SetFlavorExtraSpecs{Meta: at(2), ID: "f1", Specs: map[string]string{"k": "\u202a"}}},
		{"description update with NUL", &UpdateFlavor{Meta: at(2), ID: "f1", Description: "\x00"}},
		{"access for a project with NUL", &SetFlavorAccess{Meta: at(2), ID: "priv", Project: "p\x00", Add: true}},
		{"server name with a trailing space", boot(func(c *CreateServer) { c.Name = "db " })},
		{"server name with a zero-width space", boot(func(c *CreateServer) { c.Name = "d\u200bb" })},
		{"flavor name with a line separator", flavor(func(f *Flavor) { f.Name = "a\u2028b" })},
		{"rename with a leading space", &UpdateServer{Meta: at(2), ID: "s1", Name: new(" web")}},
		{"rename with NUL", &UpdateServer{Meta: at(2), ID: "s1", Name: new("a\x00")}},
		{"rename of 256 characters", &UpdateServer{Meta: at(2), ID: "s1", Name: new(long)}},
		{"lock reason with NUL", &UpdateServer{Meta: at(2), ID: "s1", Locked: new(true), LockedReason: "\x00"}},
		{"lock reason of 256 characters", &UpdateServer{Meta: at(2), ID: "s1", Locked: new(true), LockedReason: long}},
		{"drain reason with NUL", &SetHostDrain{Meta: at(2), Name: "h2", Drained: true, Reason: "\x00"}},
		{"adoption with a name with NUL", &AdoptServer{Meta: at(2), ID: "6f1c2a70-0000-4000-8000-0000000000ab", Name: "a\x00",
			Flavor: testFlavor("bm", "bm"), ImageRef: "img", NodeUUID: "n1", Host: "h1"}},
		{"adoption with 20,000 metadata items", &AdoptServer{Meta: at(2), ID: "6f1c2a70-0000-4000-8000-0000000000ab", Name: "a",
			Flavor: testFlavor("bm", "bm"), ImageRef: "img", NodeUUID: "n1", Host: "h1", Metadata: manyItems(20000)}},
	}
	return cases
}

// absurdFixture is serverFixture with the server s1 and the flavors f1
// and priv.
func absurdFixture(t *testing.T) *applier {
	a := serverFixture(t)
	a.ok(&CreateServer{Meta: at(1), ID: "s1", Name: "web", FlavorID: "gold", ImageRef: "img", Host: "h1"})
	a.ok(&CreateFlavor{Meta: at(1), Flavor: testFlavor("f1", "small")})
	a.ok(&CreateFlavor{Meta: at(1), Flavor: Flavor{ID: "priv", Name: "priv", VCPUs: 1, RAM: 1, Disk: 1}})
	return a
}

// An entry without Meta.Bounded, as every entry of an older leader, is
// applied as it was then: what an older version stored, a replica that
// replays the log (or a peer that has not yet the bounds) stores again,
// so replicas never differ by their version. The entry's bytes are those
// an older version wrote.
func TestUnboundedEntriesApplyAsBefore(t *testing.T) {
	storedBefore := map[string]bool{
		"server name with NUL": true, "server name with CR LF": true, "server name with a bidi override": true,
		"imageRef of 1 MB": true, "imageRef with a newline": true, "20,000 metadata items": true,
		"metadata key of 1 MB": true, "metadata value of 1 MB": true, "metadata key with a tab": true,
		"metadata value with NUL": true, "10,000 networks": true, "network uuid with NUL": true,
		"batch with a bad server": true, "flavor name with NUL": true, "flavor name with a bidi isolate": true,
		"flavor id with CR": true, "flavor description with NUL": true, "rxtx_factor 1e308": true,
		"20,000 extra specs": true, "extra spec value with NUL": true, "extra specs merged beyond the bound": true,
		"extra spec set with a bidi override": true, "description update with NUL": true,
		"access for a project with NUL": true, "rename with NUL": true, "lock reason with NUL": true,
		"drain reason with NUL": true,
	}
	refusedBefore := []string{"server name of 256 characters", "rename of 256 characters", "lock reason of 256 characters"}
	seen := 0
	for _, c := range absurdCommands() {
		if !storedBefore[c.name] && !slices.Contains(refusedBefore, c.name) {
			continue
		}
		seen++
		t.Run(c.name, func(t *testing.T) {
			a := absurdFixture(t)
			data := mustEncode(t, withBounded(c.cmd, false))
			if bytes.Contains(data, []byte(`"bounded"`)) {
				t.Fatalf("entry %s names the bounds", data[:min(len(data), 200)])
			}
			before := a.s.Digest()
			a.index++
			r := a.s.Apply(a.index, data)
			err := r.Err
			if br, ok := r.Value.(BatchResult); ok && len(br) == 1 {
				err = br[0].Err
			}
			switch {
			case storedBefore[c.name] && (err != nil || a.s.Digest() == before):
				t.Fatalf("err = %v, state changed %t: an older version stored it", err, a.s.Digest() != before)
			case !storedBefore[c.name] && !errors.Is(err, ErrInvalid):
				t.Fatalf("err = %v: an older version refused it", err)
			}
		})
	}
	if seen != len(storedBefore)+len(refusedBefore) {
		t.Fatalf("%d of %d cases found", seen, len(storedBefore)+len(refusedBefore))
	}
	// The flag itself crosses the log.
	c, err := Decode(mustEncode(t, &Noop{Meta: bounded(1)}))
	if err != nil || !c.Header().Bounded {
		t.Fatalf("decoded %+v, %v: the bounds are lost", c, err)
	}
}

// Whatever path a command took (a forwarded entry, an adoption, a batch
// of boots), Apply refuses in a command that carries Meta.Bounded the
// text no field may hold and the sizes no server or flavor may have,
// with ErrInvalid, and changes nothing.
func TestApplyRefusesAbsurdText(t *testing.T) {
	a := absurdFixture(t)
	for _, c := range absurdCommands() {
		c.cmd = withBounded(c.cmd, true)
		t.Run(c.name, func(t *testing.T) {
			before := a.s.Digest()
			r := a.apply(c.cmd)
			err := r.Err
			if br, ok := r.Value.(BatchResult); ok && len(br) == 1 {
				err = br[0].Err
			} else if r.Value != nil {
				t.Fatalf("value %v returned with an error", r.Value)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if a.s.Digest() != before {
				t.Fatal("state changed")
			}
		})
	}
	// Right at the bounds, and text of many lines where a field may hold it.
	a.ok(&CreateServer{Meta: bounded(3), ID: "s4", Name: strings.Repeat("é", 255), FlavorID: "gold", ImageRef: strings.Repeat("i", MaxImageRefLen),
		Host: "h1", Metadata: map[string]string{"k": "line\none\ttab\r"}, Networks: manyNets(MaxServerNetworks)})
	a.ok(&CreateServer{Meta: bounded(3), ID: "s5", Name: "many", FlavorID: "gold", ImageRef: "img", Host: "h1", Metadata: manyItems(MaxMetadataItems)})
	f := testFlavor("f3", "at the bound")
	f.ExtraSpecs, f.RxTxFactor, f.Description = manyItems(MaxExtraSpecs), MaxRxTxFactor, "two\nlines"
	a.ok(&CreateFlavor{Meta: bounded(3), Flavor: f})
	a.ok(&UpdateServer{Meta: bounded(3), ID: "s1", Locked: new(true), LockedReason: strings.Repeat("r", 255)})
}

// The error of a refused entry is the same on every peer, whatever the
// order a map is walked in.
func TestAbsurdTextErrorsAreDeterministic(t *testing.T) {
	meta := map[string]string{"b": "\x00", "a": "\x01", "c": "\x02"}
	want := checkMetadataText(meta).Error()
	for range 50 {
		if got := checkMetadataText(meta).Error(); got != want || !strings.Contains(got, `"a"`) {
			t.Fatalf("error %q, want %q (the first key in order)", got, want)
		}
	}
}

func TestCheckText(t *testing.T) {
	for _, c := range []struct {
		s         string
		multiline bool
		ok        bool
	}{
		{"plain", false, true}, {"café 🚀 \u200d", false, true}, {"\ufffd", false, true},
		{"a\tb", false, false}, {"a\tb", true, true}, {"a\nb\r", true, true},
		{"\x00", true, false}, {"\x7f", true, false}, {"\u0085", true, false}, {"\u202e", true, false}, {"\u2069", true, false},
		{"\xff", true, false}, {strings.Repeat("x", 11), false, false},
	} {
		err := CheckText("f", c.s, 10, c.multiline)
		if (err == nil) != c.ok || err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckText(%q, multiline %t) = %v, want ok=%t", c.s, c.multiline, err, c.ok)
		}
	}
}
