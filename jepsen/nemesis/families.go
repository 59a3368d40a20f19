package nemesis

import (
	"fmt"
	"slices"
	"strings"
)

// Families of faults, selectable with -nemesis.
var allFamilies = []string{"kill", "pause", "partition", "leader", "wipe", "restart", "combo", "keyrotate"}

// Partition variants, selectable with -partitions.
var partitionVariants = []string{"isolate-one", "majority-minority", "isolate-leader", "bridge"}

// ParseVariants parses "majority-minority,bridge" (empty: all).
func ParseVariants(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var out []string
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		ok := false
		for _, k := range partitionVariants {
			ok = ok || k == v
		}
		if !ok {
			return nil, fmt.Errorf("unknown partition %q: use %s", v, strings.Join(partitionVariants, ","))
		}
		out = append(out, v)
	}
	return out, nil
}

// ParseFamilies parses "kill,pause" or "all" (or "none").
func ParseFamilies(s string) ([]string, error) {
	if s == "all" {
		return allFamilies, nil
	}
	if s == "" || s == "none" {
		return nil, nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		ok := false
		for _, k := range allFamilies {
			ok = ok || k == f
		}
		if !ok {
			return nil, fmt.Errorf("unknown nemesis %q: use %s or all", f, strings.Join(allFamilies, ","))
		}
		out = append(out, f)
	}
	return out, nil
}

// NeedsGossipKey reports whether a family rotates the gossip key (the
// agents then start with gossip encryption).
func NeedsGossipKey(families []string) bool { return slices.Contains(families, "keyrotate") }

// NeedsFirewall reports whether any family cuts links.
func NeedsFirewall(families []string) bool {
	for _, f := range families {
		if f == "partition" || f == "combo" {
			return true
		}
	}
	return false
}
