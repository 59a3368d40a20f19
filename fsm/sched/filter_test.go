package sched

import (
	"fmt"
	"strings"
	"testing"
)

func nodeOffer(uuid string, caps map[string]string) Offer {
	return Offer{Provider: uuid, Claim: map[string]map[string]int64{uuid: {"CUSTOM_GOLD": 1}}, Node: true, Capabilities: caps}
}

func goldRequest(t *testing.T, specs map[string]string) Request {
	t.Helper()
	s := map[string]string{"resources:CUSTOM_GOLD": "1", "resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}
	for k, v := range specs {
		s[k] = v
	}
	r, err := Parse(Flavor{Name: "gold", VCPUs: 8, RAM: 1024, Disk: 10, ExtraSpecs: s})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var ironicHosts = []Candidate{{"h1", 2}, {"h2", 0}, {"h3", 1}}

// The first offer (Placement's seeded order) with every capability is
// claimed; an offer lacking one is never.
func TestPlaceSkipsOffersLackingCapabilities(t *testing.T) {
	r := goldRequest(t, map[string]string{"capabilities:boot_mode": "uefi"})
	offers := []Offer{
		nodeOffer("n-bios", map[string]string{"boot_mode": "bios"}),
		nodeOffer("n-none", nil),
		nodeOffer("n-uefi", map[string]string{"boot_mode": "uefi", "has_gpu": "true"}),
		nodeOffer("n-uefi-2", map[string]string{"boot_mode": "uefi"}),
	}
	d := Place("srv", r, offers, ironicHosts)
	if d.Claim["n-uefi"] == nil || len(d.Claim) != 1 || d.Host != "h2" || d.NoValidHost != "" {
		t.Fatalf("decision %+v, want n-uefi owned by h2 (fewest servers)", d)
	}
	d = Place("srv", r, offers[:2], ironicHosts)
	if d.Host != "" || d.Claim != nil || !d.NoCandidate ||
		!strings.Contains(d.NoValidHost, "capabilities boot_mode:uefi (2 with room lack them)") {
		t.Fatalf("only nodes lacking the capability: %+v", d)
	}
}

// Hypervisors report no capabilities: a request with some never lands on
// one.
func TestPlaceCapabilitiesExcludeHypervisors(t *testing.T) {
	r, err := Parse(Flavor{Name: "vm", VCPUs: 1, RAM: 512, ExtraSpecs: map[string]string{"capabilities:boot_mode": "uefi"}})
	if err != nil {
		t.Fatal(err)
	}
	vm := Offer{Provider: "hv1-rp", Claim: map[string]map[string]int64{"hv1-rp": {"VCPU": 1}}, Host: "hv1"}
	if d := Place("srv", r, []Offer{vm}, nil); d.Host != "" || !d.NoCandidate {
		t.Fatalf("decision %+v", d)
	}
}

// A VM offer wins over a node, on the hypervisor with the fewest servers.
func TestPlacePrefersHypervisorsByLoad(t *testing.T) {
	r, err := Parse(Flavor{Name: "vm", VCPUs: 1, RAM: 512})
	if err != nil {
		t.Fatal(err)
	}
	offers := []Offer{
		nodeOffer("legacy-node", nil),
		{Provider: "rp-a", Claim: map[string]map[string]int64{"rp-a": {"VCPU": 1}}, Host: "hv-a", Servers: 4},
		{Provider: "rp-b", Claim: map[string]map[string]int64{"rp-b": {"VCPU": 1}}, Host: "hv-b", Servers: 1},
	}
	for i := range 20 {
		d := Place(fmt.Sprintf("s%d", i), r, offers, ironicHosts)
		if d.Host != "hv-b" || d.Claim["rp-b"] == nil {
			t.Fatalf("decision %+v, want hv-b", d)
		}
	}
}

func TestPlaceWithoutIronicHostOrResources(t *testing.T) {
	r := goldRequest(t, nil)
	if d := Place("srv", r, []Offer{nodeOffer("n1", nil)}, nil); d.NoValidHost != NoIronicHost || d.NoCandidate {
		t.Fatalf("no ironic host: %+v", d)
	}
	empty, err := Parse(Flavor{Name: "nothing", ExtraSpecs: map[string]string{"resources:VCPU": "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if d := Place("srv", empty, nil, ironicHosts); !strings.Contains(d.NoValidHost, "Flavor nothing requests no resources") {
		t.Fatalf("no resources: %+v", d)
	}
	r2, err := Parse(Flavor{Name: "half", VCPUs: 2, RAM: 64, ExtraSpecs: map[string]string{"resources:CUSTOM_GOLD": "1", "trait:CUSTOM_RAID": "required"}})
	if err != nil {
		t.Fatal(err)
	}
	d := Place("srv", r2, nil, ironicHosts)
	for _, want := range []string{"CUSTOM_GOLD:1", "with traits CUSTOM_RAID", "should set resources:VCPU=0"} {
		if !strings.Contains(d.NoValidHost, want) {
			t.Fatalf("reason %q lacks %q", d.NoValidHost, want)
		}
	}
}

func TestMatchesNode(t *testing.T) {
	r := goldRequest(t, map[string]string{"trait:CUSTOM_RAID": "required", "trait:CUSTOM_SLOW": "forbidden", "capabilities": "supports_uefi"})
	ok := Node{Class: "CUSTOM_GOLD", Traits: []string{"CUSTOM_RAID"}, Capabilities: map[string]string{"supports_uefi": "true"}}
	if !r.MatchesNode(ok) {
		t.Fatal("a matching node does not match")
	}
	for name, n := range map[string]Node{
		"class":      {Class: "CUSTOM_SILVER", Traits: ok.Traits, Capabilities: ok.Capabilities},
		"trait":      {Class: ok.Class, Capabilities: ok.Capabilities},
		"forbidden":  {Class: ok.Class, Traits: []string{"CUSTOM_RAID", "CUSTOM_SLOW"}, Capabilities: ok.Capabilities},
		"capability": {Class: ok.Class, Traits: ok.Traits, Capabilities: map[string]string{"supports_uefi": "false"}},
	} {
		if r.MatchesNode(n) {
			t.Errorf("a node with the wrong %s matches", name)
		}
	}
	if got := r.MatchNodes([]Node{ok, {Class: "CUSTOM_SILVER"}, ok}); len(got) != 2 {
		t.Fatalf("MatchNodes kept %d of 2", len(got))
	}
}
