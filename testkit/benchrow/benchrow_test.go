package benchrow

import (
	"errors"
	"io"
	"math"
	"os"
	"strings"
	"testing"
)

func TestLineRoundTrips(t *testing.T) {
	in := Row{Row: "leader-kill-write-p99", Value: 0.81, Unit: "s", Goal: "<= 1", Size: Small, Scale: "3 runs"}
	line, err := Line(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `corral-bench-row: {"row":"leader-kill-write-p99","value":0.81,"unit":"s","goal":"<= 1","size":"small","scale":"3 runs"}`
	if line != want {
		t.Fatalf("line\n%s\nwant\n%s", line, want)
	}
	// After a benchmark's name on the same line, too.
	got, ok, err := ParseLine("BenchmarkRestoreScale-2   \t" + line + "  ")
	if err != nil || !ok || got != in {
		t.Fatalf("ParseLine = %+v, %t, %v; want %+v", got, ok, err, in)
	}
	if _, ok, err := ParseLine("    bench_test.go:151: | host kill | 1s |"); ok || err != nil {
		t.Fatalf("a line without the prefix: ok %t, err %v", ok, err)
	}
}

func TestBadRowsAreErrors(t *testing.T) {
	for _, line := range []string{
		Prefix + `{"row":"x","value":1,"unit":"s","size":"small"`,                   // cut short
		Prefix + `{"row":"x","value":1,"unit":"s","size":"small"} trailing`,         // text after it
		Prefix + `{"row":"x","value":1,"unit":"s","size":"huge"}`,                   // size
		Prefix + `{"row":"x","value":1,"size":"small"}`,                             // no unit
		Prefix + `{"row":"","value":1,"unit":"s","size":"small"}`,                   // no name
		Prefix + `{"row":"x","value":1,"unit":"s","size":"small","goal":"about 1"}`, // goal
		Prefix + `{"row":"x","value":1,"unit":"s","size":"small","colour":"red"}`,   // unknown field
	} {
		if _, ok, err := ParseLine(line); !ok || !errors.Is(err, ErrBadRow) {
			t.Errorf("ParseLine(%s): ok %t, err %v; want ErrBadRow", line, ok, err)
		}
	}
	for _, r := range []Row{
		{Row: "x", Value: math.NaN(), Unit: "s", Size: Small},
		{Row: "x", Value: math.Inf(1), Unit: "s", Size: Small},
		{Row: "two words", Value: 1, Unit: "s", Size: Small},
	} {
		if _, err := Line(r); !errors.Is(err, ErrBadRow) {
			t.Errorf("Line(%+v) = %v, want ErrBadRow", r, err)
		}
	}
	// A row not measured carries its reason, not a value.
	if _, err := Line(Row{Row: "x", Value: math.NaN(), Unit: "s", Size: Full, Skipped: "no iptables"}); err != nil {
		t.Errorf("a skipped row: %v", err)
	}
}

func TestParseReadsEveryRowInOrder(t *testing.T) {
	a, _ := Line(Row{Row: "a", Value: 1, Unit: "s", Size: Small})
	b, _ := Line(Row{Row: "b", Value: 2, Unit: "MB", Goal: "<= 300", Size: Small})
	out := "=== RUN   TestX\n" + a + "\n    x_test.go:1: table\n" + b + "\nPASS\n"
	rows, err := Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Row != "a" || rows[1].Row != "b" || rows[1].Value != 2 {
		t.Fatalf("rows = %+v", rows)
	}
	rows, err = Parse(strings.NewReader(a + "\n" + Prefix + "{broken\n" + b + "\n"))
	if !errors.Is(err, ErrBadRow) || len(rows) != 1 {
		t.Fatalf("a broken row: rows %+v, err %v", rows, err)
	}
}

func TestGoals(t *testing.T) {
	for _, c := range []struct {
		goal  string
		value float64
		want  string
	}{
		{"<= 1", 1, "yes"},
		{"<= 1", 1.01, "no"},
		{"< 1", 1, "no"},
		{">= 0.8", 0.8, "yes"},
		{">= 0.8", 0.79, "no"},
		{"> 0.8", 0.8, "no"},
		{">= 1,000", 1000, "yes"},
		{">=1000", 999.9, "no"},
		{"= 0", 0, "yes"},
		{"= 0", 1, "no"},
		{"", 42, "-"},
	} {
		r := Row{Row: "x", Value: c.value, Unit: "u", Goal: c.goal, Size: Small}
		if got := r.Verdict(); got != c.want {
			t.Errorf("%v against %q: %s, want %s", c.value, c.goal, got, c.want)
		}
	}
	for _, bad := range []string{"1", "<=", "<= one", "~ 1", "<= NaN", "=> 1"} {
		if _, err := ParseGoal(bad); !errors.Is(err, ErrBadGoal) {
			t.Errorf("ParseGoal(%q) = %v, want ErrBadGoal", bad, err)
		}
	}
	if got := (Row{Row: "x", Unit: "s", Goal: "<= 1", Size: Small, Skipped: "no root"}).Verdict(); got != "skipped" {
		t.Errorf("a skipped row's verdict: %s", got)
	}
}

func TestSizeFromEnv(t *testing.T) {
	for v, want := range map[string]string{"": Full, "full": Full, "small": Small} {
		t.Setenv(SizeEnv, v)
		if got, err := SizeFromEnv(); err != nil || got != want {
			t.Errorf("%s=%q: %q, %v; want %q", SizeEnv, v, got, err, want)
		}
	}
	t.Setenv(SizeEnv, "tiny")
	if _, err := SizeFromEnv(); !errors.Is(err, ErrBadSize) {
		t.Errorf("%s=tiny: %v, want ErrBadSize", SizeEnv, err)
	}
	if Pick(Small, 2, 5) != 2 || Pick(Full, 2, 5) != 5 {
		t.Error("Pick chose the wrong setting")
	}
}

func TestEmitPrintsALineTheParserReads(t *testing.T) {
	t.Setenv(SizeEnv, "small")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	Emit(t, Row{Row: "restore-scale", Value: 1.2, Unit: "s", Goal: "<= 1", Scale: "10^5 nodes"})
	os.Stdout = stdout
	_ = w.Close()
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := Parse(strings.NewReader(string(out)))
	if err != nil || len(rows) != 1 {
		t.Fatalf("%q: rows %+v, err %v", out, rows, err)
	}
	if want := (Row{Row: "restore-scale", Value: 1.2, Unit: "s", Goal: "<= 1", Size: Small, Scale: "10^5 nodes"}); rows[0] != want {
		t.Fatalf("row %+v, want %+v", rows[0], want)
	}
}
