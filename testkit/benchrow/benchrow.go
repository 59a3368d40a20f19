// Package benchrow is how corral's benchmarks report the rows of the
// performance table that `make bench` prints (testkit/benchtable): each
// measured figure as one line on standard output, the Prefix then a JSON
// object, beside the benchmark's own human tables:
//
//	corral-bench-row: {"row":"leader-kill-write-p99","value":0.81,"unit":"s","goal":"<= 1","size":"small","scale":"3 runs"}
//
// It also owns the size knob every such benchmark maps to its own
// settings: CORRAL_BENCH_SIZE=small (seconds to tens of seconds each, for
// CI) or full (the sizes docs/benchmarks.md documents; the default, so
// that the per-benchmark make targets keep measuring those).
//
// Like the rest of testkit it imports nothing of corral, only the
// standard library.
package benchrow

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Prefix starts every row's line.
const Prefix = "corral-bench-row: "

// SizeEnv names the size knob.
const SizeEnv = "CORRAL_BENCH_SIZE"

// The sizes SizeEnv takes.
const (
	Small = "small"
	Full  = "full"
)

// Row is one measured figure of the performance table.
type Row struct {
	// Row identifies the figure (e.g. "host-kill-reowned-p99"); the
	// runner expects each benchmark's rows by these names.
	Row   string  `json:"row"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Goal is the documented goal, "<op> <number>" with op one of <=, <,
	// >=, >, = (e.g. "<= 1"); empty for a figure reported without one.
	Goal string `json:"goal,omitempty"`
	// Size is the size the benchmark ran at (small or full), Scale what
	// that size was for it (e.g. "10^3 nodes", "3 runs per fault").
	Size  string `json:"size"`
	Scale string `json:"scale,omitempty"`
	// Skipped, when not empty, says why the figure could not be measured
	// on this machine (Value then means nothing).
	Skipped string `json:"skipped,omitempty"`
}

// ErrBadSize is returned for a SizeEnv value other than small or full.
var ErrBadSize = errors.New("benchrow: bad " + SizeEnv)

// ErrBadGoal is returned for a goal that is not "<op> <number>".
var ErrBadGoal = errors.New("benchrow: bad goal")

// ErrBadRow is returned for a row line that does not hold a valid row.
var ErrBadRow = errors.New("benchrow: bad row")

// SizeFromEnv returns the size SizeEnv asks for: Full when it is unset.
func SizeFromEnv() (string, error) {
	switch v := strings.TrimSpace(os.Getenv(SizeEnv)); v {
	case "", Full:
		return Full, nil
	case Small:
		return Small, nil
	default:
		return "", fmt.Errorf("%w: %q (want %s or %s)", ErrBadSize, v, Small, Full)
	}
}

// Size returns the size SizeEnv asks for, failing tb on a bad value.
func Size(tb testing.TB) string {
	tb.Helper()
	s, err := SizeFromEnv()
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// Pick returns small when the size is Small, else full: a benchmark's
// default for a setting, which its own CORRAL_BENCH_* variable still
// overrides.
func Pick[T any](size string, small, full T) T {
	if size == Small {
		return small
	}
	return full
}

// Line is r's line (without the newline), or an error when r is not a
// row the runner can read: no name or unit, a value that is not finite,
// a bad goal or size.
func Line(r Row) (string, error) {
	if err := r.Check(); err != nil {
		return "", err
	}
	if r.Skipped != "" {
		r.Value = 0 // not measured (and JSON has no NaN)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // goals read "<= 1", not "\u003c= 1"
	if err := enc.Encode(r); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadRow, err)
	}
	return Prefix + strings.TrimSuffix(b.String(), "\n"), nil
}

// Check says what is wrong with r, if anything.
func (r Row) Check() error {
	switch {
	case r.Row == "" || strings.ContainsAny(r.Row, " \t\n"):
		return fmt.Errorf("%w: row name %q", ErrBadRow, r.Row)
	case r.Unit == "":
		return fmt.Errorf("%w: %s has no unit", ErrBadRow, r.Row)
	case r.Size != Small && r.Size != Full:
		return fmt.Errorf("%w: %s: size %q", ErrBadRow, r.Row, r.Size)
	case r.Skipped == "" && (math.IsNaN(r.Value) || math.IsInf(r.Value, 0)):
		return fmt.Errorf("%w: %s: value %v", ErrBadRow, r.Row, r.Value)
	}
	if _, err := ParseGoal(r.Goal); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadRow, r.Row, err)
	}
	return nil
}

// Emit prints r's line on standard output, its size defaulting to
// SizeEnv's; a row the runner could not read fails tb.
func Emit(tb testing.TB, r Row) {
	tb.Helper()
	if r.Size == "" {
		r.Size = Size(tb)
	}
	line, err := Line(r)
	if err != nil {
		tb.Fatal(err)
	}
	// One write, whole lines: whatever the test framework printed last
	// on this line (a benchmark's name), the row starts a line of its own.
	fmt.Fprint(os.Stdout, "\n"+line+"\n")
}

// ParseLine reads the row of one line of output: ok is false for a line
// without Prefix; the row may follow other text on the line.
func ParseLine(line string) (r Row, ok bool, err error) {
	i := strings.Index(line, Prefix)
	if i < 0 {
		return Row{}, false, nil
	}
	dec := json.NewDecoder(strings.NewReader(line[i+len(Prefix):]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Row{}, true, fmt.Errorf("%w: %q: %v", ErrBadRow, line, err)
	}
	if rest, _ := io.ReadAll(dec.Buffered()); len(bytes.TrimSpace(rest)) > 0 {
		return Row{}, true, fmt.Errorf("%w: %q: text after the row", ErrBadRow, line)
	}
	if err := r.Check(); err != nil {
		return Row{}, true, err
	}
	return r, true, nil
}

// Parse reads every row in out, in order; a line with Prefix that holds
// no valid row is an error (the rows read before it are returned).
func Parse(out io.Reader) ([]Row, error) {
	var rows []Row
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		r, ok, err := ParseLine(sc.Text())
		if err != nil {
			return rows, err
		}
		if ok {
			rows = append(rows, r)
		}
	}
	return rows, sc.Err()
}

// Goal is a parsed goal: Op one of <=, <, >=, >, =; Op "" for none.
type Goal struct {
	Op    string
	Bound float64
}

// ParseGoal parses "<op> <number>" ("" is no goal). Numbers may carry
// thousands separators ("1,000").
func ParseGoal(s string) (Goal, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Goal{}, nil
	}
	for _, op := range []string{"<=", ">=", "<", ">", "="} {
		rest, ok := strings.CutPrefix(s, op)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(rest), ",", ""), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return Goal{}, fmt.Errorf("%w: %q: want <op> <number>", ErrBadGoal, s)
		}
		return Goal{Op: op, Bound: v}, nil
	}
	return Goal{}, fmt.Errorf("%w: %q: want one of <=, <, >=, >, = then a number", ErrBadGoal, s)
}

// Met says whether v meets g; judged is false when g is no goal.
func (g Goal) Met(v float64) (met, judged bool) {
	switch g.Op {
	case "<=":
		return v <= g.Bound, true
	case "<":
		return v < g.Bound, true
	case ">=":
		return v >= g.Bound, true
	case ">":
		return v > g.Bound, true
	case "=":
		return v == g.Bound, true
	}
	return false, false
}

// Verdict is "yes" or "no" for a row with a goal, "skipped" for a row not
// measured, "-" for one without a goal.
func (r Row) Verdict() string {
	if r.Skipped != "" {
		return "skipped"
	}
	g, err := ParseGoal(r.Goal)
	if err != nil {
		return "?"
	}
	met, judged := g.Met(r.Value)
	switch {
	case !judged:
		return "-"
	case met:
		return "yes"
	default:
		return "no"
	}
}
