package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/corral-dev/corral/jepsen/check"
	"github.com/corral-dev/corral/jepsen/history"
)

// writeActions writes the actions checker's part of report.md.
func writeActions(w func(string, ...any), a *check.ActionResult) {
	w("")
	w("## Server actions and their side effects in Ironic")
	w("")
	w("| action | accepted | refused | unknown |")
	w("|---|---|---|---|")
	for _, k := range []string{history.ActRebuild, history.ActRebootHard, history.ActRebootSoft, history.ActStop, history.ActStart} {
		if c := a.ByKind[k]; c != nil {
			w("| %s | %d | %d | %d |", k, c[history.OK], c[history.Fail], c[history.Info])
		}
	}
	nodes, twice := 0, 0
	for _, n := range slices.Sorted(maps.Keys(a.Nodes)) {
		if a.Nodes[n].Doubled > 0 {
			nodes++
			twice += a.Nodes[n].Doubled
		}
	}
	w("")
	w("Rebuilds: %d nodes rebuilt; %d of them re-imaged twice for one request (%d requests).", len(a.Nodes), nodes, twice)
	if len(a.NoID) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(a.NoID)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, a.NoID[k]))
		}
		w("")
		w("Power changes and rebuilds Ironic took without a request id, by agent: %s.", strings.Join(parts, ", "))
	}
	if len(a.Anomalies) > 0 {
		w("")
		w("### Anomalies")
		w("")
		for _, an := range a.Anomalies {
			w("- `%s` %s: %s", an.Kind, an.Server, strings.ReplaceAll(an.Detail, "|", `\|`))
		}
		for _, k := range slices.Sorted(maps.Keys(a.Counts)) {
			if a.Counts[k] > 25 {
				w("- … %d `%s` in all", a.Counts[k], k)
			}
		}
	}
	if len(a.Notes) > 0 {
		w("")
		w("### Notes (not counted)")
		w("")
		for _, n := range a.Notes {
			w("- %s", n)
		}
	}
}
