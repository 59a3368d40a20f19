package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/testkit/benchrow"
)

func TestTableDefinitionHolds(t *testing.T) {
	if err := check(benches); err != nil {
		t.Fatal(err)
	}
	ok := bench{name: "x", pkg: "x", run: "^$", bench: "^B$", rows: []row{{"r", "r"}},
		timeout:   map[string]time.Duration{benchrow.Small: time.Minute, benchrow.Full: time.Minute},
		benchtime: map[string]string{benchrow.Small: "1x", benchrow.Full: "1x"}}
	if err := check([]bench{ok}); err != nil {
		t.Fatal(err)
	}
	noTimeout := ok
	noTimeout.timeout = map[string]time.Duration{benchrow.Small: time.Minute}
	noBenchtime := ok
	noBenchtime.benchtime = nil
	sameRow := ok
	sameRow.name, sameRow.pkg = "y", "y"
	sameBinary := ok
	sameBinary.name, sameBinary.pkg, sameBinary.rows = "z", "other/x", []row{{"s", "s"}}
	for name, bs := range map[string][]bench{
		"no full timeout": {noTimeout}, "no benchtime": {noBenchtime}, "a row twice": {ok, sameRow},
		"one binary name": {ok, sameBinary}, "no rows": {{name: "x", pkg: "x", run: "^$"}},
	} {
		if err := check(bs); err == nil {
			t.Errorf("%s: check passed", name)
		}
	}
}

func TestPickKeepsTheTablesOrder(t *testing.T) {
	got, err := pick(benches, "restore, api-writes")
	if err != nil || len(got) != 2 || got[0].name != "api-writes" || got[1].name != "restore" {
		t.Fatalf("pick = %v, %v", got, err)
	}
	if _, err := pick(benches, "api-writes,nope"); err == nil {
		t.Fatal("an unknown benchmark was accepted")
	}
}

var twoRows = bench{name: "fake", pkg: "fake", run: "^TestFakeBenchmark$", target: "bench-fake",
	timeout: map[string]time.Duration{benchrow.Small: time.Minute, benchrow.Full: time.Minute},
	rows:    []row{{"fake-p99", "fake p99"}, {"fake-ratio", "fake ratio"}}}

func TestMissingRowsFailTheRunAndGoalsDoNot(t *testing.T) {
	met := benchrow.Row{Row: "fake-p99", Value: 0.5, Unit: "s", Goal: "<= 1", Size: benchrow.Small}
	notMet := benchrow.Row{Row: "fake-ratio", Value: 0.4, Unit: "×", Goal: ">= 0.8", Size: benchrow.Small}

	all := result{Rows: []benchrow.Row{met, notMet}}
	collect(twoRows, &all)
	if all.failed() || len(all.Missing) > 0 {
		t.Fatalf("every row printed, a goal not met: failed %t, missing %v, err %q", all.failed(), all.Missing, all.Err)
	}
	if met.Verdict() != "yes" || notMet.Verdict() != "no" {
		t.Fatalf("verdicts %s, %s", met.Verdict(), notMet.Verdict())
	}

	one := result{Rows: []benchrow.Row{notMet}}
	collect(twoRows, &one)
	if !one.failed() || !slices.Equal(one.Missing, []string{"fake-p99"}) {
		t.Fatalf("a row missing: failed %t, missing %v", one.failed(), one.Missing)
	}
	none := result{}
	collect(twoRows, &none)
	if !none.failed() || !slices.Equal(none.Missing, []string{"fake-p99", "fake-ratio"}) {
		t.Fatalf("no row: failed %t, missing %v", none.failed(), none.Missing)
	}
	twice := result{Rows: []benchrow.Row{met, met, notMet}}
	collect(twoRows, &twice)
	if !twice.failed() || !strings.Contains(twice.Err, "fake-p99 printed 2 times") {
		t.Fatalf("a row twice: failed %t, err %q", twice.failed(), twice.Err)
	}
	rep := report{Benchmarks: []result{all, one}}
	if f := rep.failures(); len(f) != 1 || !strings.Contains(f[0], "no row fake-p99") {
		t.Fatalf("failures %v", f)
	}
}

// TestFakeBenchmark is the benchmark runOne runs in the tests below (this
// test binary, through a link named like a package's test binary): it
// prints what FAKE_BENCH asks for. Without it, it does nothing.
func TestFakeBenchmark(t *testing.T) {
	switch os.Getenv("FAKE_BENCH") {
	case "":
		return
	case "all":
		benchrow.Emit(t, benchrow.Row{Row: "fake-p99", Value: 1.5, Unit: "s", Goal: "<= 1", Scale: "3 runs"})
		benchrow.Emit(t, benchrow.Row{Row: "fake-ratio", Value: 0.9, Unit: "×", Goal: ">= 0.8"})
	case "one":
		benchrow.Emit(t, benchrow.Row{Row: "fake-p99", Value: 0.5, Unit: "s", Goal: "<= 1"})
	case "fail":
		benchrow.Emit(t, benchrow.Row{Row: "fake-p99", Value: 0.5, Unit: "s", Goal: "<= 1"})
		benchrow.Emit(t, benchrow.Row{Row: "fake-ratio", Value: 0.9, Unit: "×", Goal: ">= 0.8"})
		t.Fatal("every server must reach ACTIVE")
	case "garbled":
		os.Stdout.WriteString(benchrow.Prefix + `{"row":"fake-p99","value":` + "\n")
	}
}

// fakeRun runs TestFakeBenchmark as runOne runs a benchmark.
func fakeRun(t *testing.T, mode string) result {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root, work := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "fake"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(work, twoRows.binary())); err != nil {
		t.Fatal(err)
	}
	env := benchEnv(append(os.Environ(), "FAKE_BENCH="+mode), benchrow.Small, "/nonexistent/corral", false)
	return runOne(t.Context(), root, work, work, twoRows, benchrow.Small, env, false, io.Discard)
}

func TestRunOneReadsTheRowsABenchmarkPrints(t *testing.T) {
	res := fakeRun(t, "all")
	if res.failed() || len(res.Rows) != 2 {
		t.Fatalf("err %q, missing %v, rows %+v", res.Err, res.Missing, res.Rows)
	}
	if r := res.Rows[0]; r.Row != "fake-p99" || r.Value != 1.5 || r.Size != benchrow.Small || r.Scale != "3 runs" || r.Verdict() != "no" {
		t.Fatalf("row %+v", r)
	}
	if res.LoadStart < 0 && runtimeHasLoadavg() {
		t.Fatalf("no load average: %v", res.LoadStart)
	}
	log, err := os.ReadFile(res.Log)
	if err != nil || !strings.Contains(string(log), "--- PASS: TestFakeBenchmark") {
		t.Fatalf("log %s: %v\n%s", res.Log, err, log)
	}
}

func TestRunOneFailsOnMissingRowsAndFailedRuns(t *testing.T) {
	if res := fakeRun(t, "one"); !res.failed() || res.Err != "" || !slices.Equal(res.Missing, []string{"fake-ratio"}) {
		t.Errorf("a row missing: err %q, missing %v", res.Err, res.Missing)
	}
	res := fakeRun(t, "fail")
	if !res.failed() || !strings.Contains(res.Err, "exit status 1") || len(res.Rows) != 2 {
		t.Errorf("a failed run: err %q, rows %d", res.Err, len(res.Rows))
	}
	if res := fakeRun(t, "garbled"); !res.failed() || !strings.Contains(res.Err, "bad row") {
		t.Errorf("a garbled row: err %q, missing %v", res.Err, res.Missing)
	}
}

func runtimeHasLoadavg() bool {
	_, err := os.Stat("/proc/loadavg")
	return err == nil
}

func TestBenchEnvLeavesTheControlPlaneOut(t *testing.T) {
	env := benchEnv([]string{"PATH=/usr/bin", "IRONIC_URL=http://127.0.0.1:6385", "OPENSTACK_ENV=/x", "NEUTRON_ENV=/y",
		"OS_AUTH_URL=http://127.0.0.1:5000", "MARIADB_ENV=/z", "CORRAL_BENCH=0", "CORRAL_BENCH_RUNS=5", "CORRAL_BENCH_SIZE=full",
		"CI=true", "CORRAL_RACE=1"}, benchrow.Small, "/b/corral", false)
	want := []string{"PATH=/usr/bin", "CORRAL_BENCH_RUNS=5", "CI=true", "CORRAL_BENCH=1", "CORRAL_BENCH_SIZE=small",
		"CORRAL_BIN=/b/corral", "CORRAL_RACE=false"}
	if !slices.Equal(env, want) {
		t.Fatalf("env\n%q\nwant\n%q", env, want)
	}
}

func TestTableShowsEveryRowItsGoalAndTheLoad(t *testing.T) {
	rep := report{Size: benchrow.Small, CPUs: 2, GoVersion: "go1.26.8", Commit: "abc", Started: time.Unix(0, 0), Seconds: 200,
		Benchmarks: []result{{Name: "fake", LoadStart: 2.5, LoadEnd: 3.25, Seconds: 12.34,
			Rows: []benchrow.Row{
				{Row: "fake-p99", Value: 1.5, Unit: "s", Goal: "<= 1", Size: benchrow.Small, Scale: "3 runs"},
				{Row: "fake-rate", Value: 1234.4, Unit: "/s", Goal: ">= 1,000", Size: benchrow.Small},
				{Row: "fake-ratio", Value: 0.1234, Unit: "×", Size: benchrow.Small},
				{Row: "fake-cut", Unit: "s", Goal: "<= 3", Size: benchrow.Small, Skipped: "no iptables"},
			}, Missing: []string{"fake-gone"}}}}
	var md strings.Builder
	if err := rep.writeMarkdown(&md, map[string]string{"fake-p99": "fake kill → re-owned, p99"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"size small: 2 CPUs, go1.26.8, commit abc",
		"| `fake-p99` | fake kill → re-owned, p99 | 1.5 | s | <= 1 | no | small: 3 runs | fake | 2.50 → 3.25 | 12.3s |",
		"| `fake-rate` |  | 1,234 | /s | >= 1,000 | yes | small |",
		"| `fake-ratio` |  | 0.123 | × | - | - | small |",
		"| `fake-cut` |  | skipped: no iptables | s | <= 3 | skipped |",
		"| `fake-gone` |  | MISSING |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	var text strings.Builder
	if err := rep.writeText(&text, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "fake-p99") || !strings.Contains(text.String(), "2.50 → 3.25") {
		t.Errorf("text:\n%s", text.String())
	}
}

func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.656: "0.656", 2.285: "2.29", 37: "37", 99.94: "99.9", 1034.6: "1,035",
		123456: "123,456", 0.00012: "0.00012", -1500: "-1,500"} {
		if got := formatValue(v); got != want {
			t.Errorf("formatValue(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"1x": "1x", "-test.run": "-test.run", "^$": "'^$'", "": "''", "it's": `'it'\''s'`} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// A value that misses its goal by less than its shown digits is shown
// with the digits that tell it from the goal: 1.105 against "<= 1.1" is
// not "1.1 … no".
func TestFormatRowShowsWhyAGoalIsMissed(t *testing.T) {
	for _, c := range []struct {
		v    float64
		goal string
		want string
	}{
		{1.104834271, "<= 1.1", "1.105"},
		{0.79969, ">= 0.8", "0.7997"},
		{1.1, "<= 1.1", "1.1"},
		{1.09, "<= 1.1", "1.09"},
		{0.645, ">= 0.8", "0.645"},
		{823.4, ">= 1000", "823"},
		{999.6, ">= 1000", "999.6"},
		{0, "= 0", "0"},
		{2, "", "2"},
	} {
		if got := formatRow(benchrow.Row{Value: c.v, Goal: c.goal}); got != c.want {
			t.Errorf("formatRow(%v, %q) = %q, want %q", c.v, c.goal, got, c.want)
		}
	}
}
