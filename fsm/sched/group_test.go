package sched

import (
	"fmt"
	"testing"
)

func TestGroupHosts(t *testing.T) {
	cands := []Candidate{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	names := func(cs []Candidate) string {
		s := ""
		for _, c := range cs {
			s += c.Name
		}
		return s
	}
	for _, tc := range []struct {
		g    *Group
		want string
	}{
		{nil, "abc"},
		{&Group{Policy: PolicyAffinity}, "abc"},
		{&Group{Policy: PolicyAffinity, Members: map[string]int{"b": 2}}, "b"},
		{&Group{Policy: PolicyAffinity, Members: map[string]int{"gone": 1}}, ""},
		{&Group{Policy: PolicyAntiAffinity, Members: map[string]int{"a": 1, "c": 1}}, "b"},
		{&Group{Policy: PolicyAntiAffinity, Members: map[string]int{"a": 1, "b": 1, "c": 1}}, ""},
		{&Group{Policy: PolicyAntiAffinity, MaxPerHost: 2, Members: map[string]int{"a": 2, "b": 1}}, "bc"},
		{&Group{Policy: PolicySoftAffinity, Members: map[string]int{"a": 1, "c": 3}}, "c"},
		{&Group{Policy: PolicySoftAffinity}, "abc"},
		{&Group{Policy: PolicySoftAntiAffinity, Members: map[string]int{"a": 1, "b": 1, "c": 1}}, "abc"},
		{&Group{Policy: PolicySoftAntiAffinity, Members: map[string]int{"a": 2, "b": 1, "c": 1}}, "bc"},
	} {
		if got := names(tc.g.Hosts(cands)); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.g, got, tc.want)
		}
	}
}

func TestReassignGroups(t *testing.T) {
	cands := []Candidate{{Name: "h1"}, {Name: "h2"}, {Name: "h3"}}
	ids := []string{"s1", "s2", "s3", "s4"}
	// Without groups, the plan is Reassign's.
	if got, want := fmt.Sprint(ReassignGroups(ids, cands, nil)), fmt.Sprint(Reassign(ids, cands)); got != want {
		t.Fatalf("no groups: %s, Reassign: %s", got, want)
	}
	hostOf := func(as []Assignment) map[string]string {
		m := map[string]string{}
		for _, a := range as {
			m[a.ServerID] = a.Host
		}
		return m
	}
	// Affinity: the members of a dead host move together.
	aff := &Group{Policy: PolicyAffinity}
	m := hostOf(ReassignGroups(ids, cands, map[string]*Group{"s1": aff, "s2": aff, "s3": aff}))
	if m["s1"] != m["s2"] || m["s2"] != m["s3"] {
		t.Errorf("affinity members split: %v", m)
	}
	if len(aff.Members) != 0 {
		t.Error("the plan changed the caller's group")
	}
	// ... and join the members that stayed, wherever they are.
	m = hostOf(ReassignGroups(ids, cands, map[string]*Group{"s1": {Policy: PolicyAffinity, Members: map[string]int{"h3": 1}}}))
	if m["s1"] != "h3" {
		t.Errorf("affinity member went to %s, not to its group on h3", m["s1"])
	}
	// Anti-affinity: one member per host while there are hosts.
	anti := &Group{Policy: PolicyAntiAffinity, Members: map[string]int{"h1": 1}}
	m = hostOf(ReassignGroups(ids, cands, map[string]*Group{"s1": anti, "s2": anti}))
	if m["s1"] == "h1" || m["s2"] == "h1" || m["s1"] == m["s2"] {
		t.Errorf("anti-affinity members together: %v", m)
	}
	// More members than hosts: every server still moves, spread out.
	m = hostOf(ReassignGroups(ids, cands, map[string]*Group{"s1": anti, "s2": anti, "s3": anti, "s4": anti}))
	per := map[string]int{}
	for _, h := range m {
		per[h]++
	}
	if len(m) != 4 || per["h1"] > 2 || per["h2"] > 2 || per["h3"] > 2 {
		t.Errorf("anti-affinity beyond the hosts: %v", m)
	}
	// The plan depends on the inputs only.
	g := map[string]*Group{"s2": {Policy: PolicySoftAntiAffinity, Members: map[string]int{"h2": 1}}}
	a := fmt.Sprint(ReassignGroups(ids, cands, g))
	b := fmt.Sprint(ReassignGroups([]string{"s4", "s3", "s2", "s1"}, []Candidate{cands[2], cands[0], cands[1]}, g))
	if a != b {
		t.Errorf("order changed the plan: %s vs %s", a, b)
	}
}
