package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/corral-dev/corral/testkit/benchrow"
)

// result is what one benchmark's run gave.
type result struct {
	Name      string         `json:"name"`
	Package   string         `json:"package"`
	Target    string         `json:"make_target"`
	Command   string         `json:"command"`
	LoadStart float64        `json:"load1_start"` // the 1-minute load average; -1 when unknown
	LoadEnd   float64        `json:"load1_end"`
	Seconds   float64        `json:"seconds"`
	Err       string         `json:"error,omitempty"` // it failed to run, or printed a row the parser could not read
	Missing   []string       `json:"missing_rows,omitempty"`
	Rows      []benchrow.Row `json:"rows"`
	Log       string         `json:"log"`
}

// failed says whether the run counts as a failure of the table: the
// benchmark did not run to its end, or a row it must print is missing. A
// goal not met is no failure.
func (r result) failed() bool { return r.Err != "" || len(r.Missing) > 0 }

// report is the whole table.
type report struct {
	Size         string    `json:"size"`
	CPUs         int       `json:"cpus"`
	GoVersion    string    `json:"go_version"`
	Commit       string    `json:"commit"`
	Started      time.Time `json:"started"`
	BuildSeconds float64   `json:"build_seconds"` // the corral binary and the test binaries
	Seconds      float64   `json:"seconds"`       // the whole run, builds included
	Benchmarks   []result  `json:"benchmarks"`
}

// collect fills res's missing rows from what b must print: a row b
// must print and did not is missing, in b's order. Rows b printed but
// does not declare are kept; a row printed twice is an error.
func collect(b bench, res *result) {
	res.Missing = nil
	count := map[string]int{}
	for _, r := range res.Rows {
		count[r.Row]++
	}
	for _, want := range b.rows {
		if count[want.id] == 0 {
			res.Missing = append(res.Missing, want.id)
		}
	}
	for _, r := range res.Rows {
		if count[r.Row] > 1 && res.Err == "" {
			res.Err = fmt.Sprintf("row %s printed %d times", r.Row, count[r.Row])
		}
	}
}

// failures lists what made the run fail, one line each.
func (rep report) failures() []string {
	var out []string
	for _, r := range rep.Benchmarks {
		if r.Err != "" {
			out = append(out, fmt.Sprintf("%s: %s (log: %s)", r.Name, r.Err, r.Log))
		}
		if len(r.Missing) > 0 {
			out = append(out, fmt.Sprintf("%s: no row %s (log: %s)", r.Name, strings.Join(r.Missing, ", "), r.Log))
		}
	}
	return out
}

// line is one line of the table.
type line struct {
	bench, row, label, value, unit, goal, met, size, load, took string
}

func (rep report) lines(labels map[string]string) []line {
	var out []line
	for _, res := range rep.Benchmarks {
		load := fmt.Sprintf("%s → %s", loadString(res.LoadStart), loadString(res.LoadEnd))
		took := (time.Duration(res.Seconds*10) * time.Second / 10).String()
		add := func(l line) {
			l.bench, l.load, l.took = res.Name, load, took
			out = append(out, l)
		}
		for _, r := range res.Rows {
			size := r.Size
			if r.Scale != "" {
				size += ": " + r.Scale
			}
			value := formatRow(r)
			if r.Skipped != "" {
				value = "skipped: " + r.Skipped
			}
			add(line{row: r.Row, label: labels[r.Row], value: value, unit: r.Unit, goal: orDash(r.Goal), met: r.Verdict(), size: size})
		}
		for _, m := range res.Missing {
			add(line{row: m, label: labels[m], value: "MISSING", unit: "", goal: "", met: "-", size: rep.Size})
		}
		if res.Err != "" && len(res.Rows)+len(res.Missing) == 0 {
			add(line{row: "(none)", value: "FAILED", met: "-", size: rep.Size})
		}
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// header is the table's first line: the machine and the run.
func (rep report) header() string {
	return fmt.Sprintf("make bench, size %s: %d CPUs, %s, commit %s, %s; %s in all (builds %s)",
		rep.Size, rep.CPUs, rep.GoVersion, rep.Commit, rep.Started.UTC().Format("2006-01-02 15:04 UTC"),
		(time.Duration(rep.Seconds) * time.Second).String(), (time.Duration(rep.BuildSeconds) * time.Second).String())
}

// writeText writes the table for a terminal.
func (rep report) writeText(w io.Writer, labels map[string]string) error {
	if _, err := fmt.Fprintln(w, rep.header()); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "row\tvalue\tunit\tgoal\tmet\tsize\tbenchmark\tload 1-min\ttook")
	for _, l := range rep.lines(labels) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.row, l.value, l.unit, l.goal, l.met, l.size, l.bench, l.load, l.took)
	}
	return tw.Flush()
}

// writeMarkdown writes the table as docs/benchmarks.md shows it.
func (rep report) writeMarkdown(w io.Writer, labels map[string]string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", rep.header())
	b.WriteString("| row | measures | value | unit | goal | met | size | benchmark | load 1-min (start → end) | took |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, l := range rep.lines(labels) {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", l.row, mdEscape(l.label), mdEscape(l.value),
			mdEscape(l.unit), mdEscape(l.goal), l.met, mdEscape(l.size), l.bench, l.load, l.took)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// formatValue prints three significant digits, and whole numbers from 100
// on (with thousands separators).
func formatValue(v float64) string {
	switch a := math.Abs(v); {
	case v == 0:
		return "0"
	case a >= 100:
		return thousands(int64(math.Round(v)))
	default:
		s := strconv.FormatFloat(v, 'g', 3, 64)
		if strings.ContainsAny(s, "e") && a >= 1e-4 {
			s = strconv.FormatFloat(v, 'f', -1, 64)
		}
		return s
	}
}

// formatRow is formatValue of r's value, with more digits where those
// would read as meeting a goal the value misses (1.105 against <= 1.1
// shows as 1.105, not 1.1), or the other way round.
func formatRow(r benchrow.Row) string {
	s := formatValue(r.Value)
	if r.Goal == "" {
		return s
	}
	verdict := r.Verdict()
	for more := 1; more <= 6; more++ {
		shown, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
		if err != nil {
			return s
		}
		r2 := r
		r2.Value = shown
		if r2.Verdict() == verdict {
			return s
		}
		if math.Abs(r.Value) >= 100 {
			s = strconv.FormatFloat(r.Value, 'f', more, 64)
		} else {
			s = strconv.FormatFloat(r.Value, 'g', 3+more, 64)
		}
	}
	return s
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var parts []string
	for len(s) > 3 {
		parts = append(parts, s[len(s)-3:])
		s = s[:len(s)-3]
	}
	parts = append(parts, s)
	slices.Reverse(parts)
	out := strings.Join(parts, ",")
	if neg {
		out = "-" + out
	}
	return out
}

func loadString(v float64) string {
	if v < 0 {
		return "?"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// labels maps every row of bs to what it measures.
func labels(bs []bench) map[string]string {
	m := map[string]string{}
	for _, b := range bs {
		for _, r := range b.rows {
			m[r.id] = r.label
		}
	}
	return m
}
