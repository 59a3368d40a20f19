// Package report writes a run's results: report.md (report.go, with the
// actions workload's part in actions.go), latency.png (plot.go), the files
// -recheck reads again and the summary printed at the end (results.go).
package report
