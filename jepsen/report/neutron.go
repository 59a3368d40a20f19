package report

import (
	"maps"
	"slices"

	"github.com/corral-dev/corral/jepsen/check"
)

// writeNeutron writes the Neutron checker's part of report.md.
func writeNeutron(w func(string, ...any), n *check.NeutronResult) {
	w("")
	w("## Neutron ports")
	w("")
	w("%s.", n.Summary())
	w("")
	opt := "corral has no option for the reaper's grace yet: the agents kept their default"
	if n.Reap.Option != "" {
		opt = "the agents' `[neutron] " + n.Reap.Option + "`"
	}
	w("Reaper: the suite waited %.1fs (at most %.0fs: a grace of %.0fs, %s) for the ports whose server is gone; %d orphans when it began, %d when it read Neutron for the check.",
		n.Reap.WaitedS, n.Reap.WaitS, n.Reap.GraceS, opt, n.Reap.OrphansBefore, n.Reap.OrphansAfter)
	if len(n.Anomalies) > 0 {
		w("")
		for _, an := range n.Anomalies {
			w("- `%s` %s: %s", an.Kind, an.Server, an.Detail)
		}
		for _, k := range slices.Sorted(maps.Keys(n.Counts)) {
			if c := n.Counts[k]; c > 25 {
				w("- … %d `%s` in all", c, k)
			}
		}
	}
	if len(n.Anomalies) == 0 && len(n.Notes) > 0 {
		w("")
	}
	for _, note := range n.Notes {
		w("- note: %s", note)
	}
}
