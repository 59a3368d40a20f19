// Command benchtable runs every benchmark of corral's performance goals
// one after the other (`make bench`, BENCH_SIZE=small by default, or
// full) and prints one table of the rows they report (testkit/benchrow):
// row, value, unit, goal, whether it is met, the size, and the machine's
// 1-minute load average at the start and end of each benchmark. It
// writes the same table as markdown and JSON (bin/bench.md,
// bin/bench.json by default) and each benchmark's output to a log.
//
// It builds the corral binary once (CORRAL_BIN, when set, is used
// instead), without the race detector unless -race (the benchmarks
// measure the binary operators run, whatever CORRAL_RACE and CI say to the
// test tiers), and the test binaries of the benchmarks' packages, then runs
// each with CORRAL_BENCH=1 and CORRAL_BENCH_SIZE, without the variables
// that name the services of a shared control plane (IRONIC_URL,
// OPENSTACK_ENV, NEUTRON_ENV, OS_*, ...): every benchmark runs on the
// embedded simulator. Other CORRAL_BENCH_* variables pass through and
// override a size's settings.
//
// It exits 1 when a benchmark fails to run or does not print one of its
// rows, 2 on bad usage; a goal not met is reported, never a failure
// (machines are noisy: no timing assertions).
//
// It imports nothing of corral but testkit/benchrow.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/testkit/benchrow"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	size, out, jsonOut, work, only string
	verbose, race                  bool
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchtable", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.size, "size", benchrow.Small, "small (seconds to tens of seconds each, for CI) or full (the documented sizes)")
	fs.StringVar(&o.out, "out", "bin/bench.md", "the table as markdown (relative to the module's root)")
	fs.StringVar(&o.jsonOut, "json", "bin/bench.json", "the table as JSON (relative to the module's root)")
	fs.StringVar(&o.work, "work", "bin/bench", "binaries and logs (relative to the module's root)")
	fs.StringVar(&o.only, "only", "", "comma-separated benchmark names to run (default: all): "+names(benches))
	fs.BoolVar(&o.verbose, "v", false, "stream each benchmark's output too (it always goes to its log)")
	fs.BoolVar(&o.race, "race", false, "build the agents with the race detector (CORRAL_RACE, which CI sets for the test tiers, is ignored)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.size != benchrow.Small && o.size != benchrow.Full {
		fmt.Fprintf(stderr, "benchtable: -size %q: want %s or %s\n", o.size, benchrow.Small, benchrow.Full)
		return 2
	}
	if err := check(benches); err != nil {
		fmt.Fprintln(stderr, "benchtable:", err)
		return 2
	}
	selected, err := pick(benches, o.only)
	if err != nil {
		fmt.Fprintln(stderr, "benchtable:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := runAll(ctx, o, selected, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "benchtable:", err)
		return 1
	}
	fmt.Fprintln(stdout)
	if err := rep.writeText(stdout, labels(benches)); err != nil {
		fmt.Fprintln(stderr, "benchtable:", err)
		return 1
	}
	if fails := rep.failures(); len(fails) > 0 {
		fmt.Fprintln(stderr, "\nbenchtable: FAILED:")
		for _, f := range fails {
			fmt.Fprintln(stderr, "  "+f)
		}
		return 1
	}
	return 0
}

func names(bs []bench) string {
	var n []string
	for _, b := range bs {
		n = append(n, b.name)
	}
	return strings.Join(n, ",")
}

// pick returns the benchmarks only names (all for ""), in the table's
// order; an unknown name is an error.
func pick(bs []bench, only string) ([]bench, error) {
	if strings.TrimSpace(only) == "" {
		return bs, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		want[strings.TrimSpace(n)] = true
	}
	var out []bench
	for _, b := range bs {
		if want[b.name] {
			out = append(out, b)
			delete(want, b.name)
		}
	}
	for n := range want {
		return nil, fmt.Errorf("-only: no benchmark %q (have %s)", n, names(bs))
	}
	return out, nil
}

// runAll builds, runs every benchmark and writes the report's files.
func runAll(ctx context.Context, o options, bs []bench, stdout io.Writer) (report, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return report{}, err
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}
	work := abs(o.work)
	logs := filepath.Join(work, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return report{}, err
	}
	rep := report{Size: o.size, CPUs: runtime.NumCPU(), GoVersion: goVersion(ctx, root), Commit: commit(ctx, root),
		Started: time.Now()}
	fmt.Fprintf(stdout, "benchtable: size %s, %d benchmarks, %d CPUs, load %s; logs in %s\n",
		o.size, len(bs), rep.CPUs, loadString(load1()), logs)

	race := o.race
	built := time.Now()
	bin := os.Getenv("CORRAL_BIN")
	if bin == "" {
		bin = filepath.Join(work, "corral")
		fmt.Fprintf(stdout, "benchtable: building %s (race %t)\n", bin, race)
		args := []string{"build", "-o", bin}
		if race {
			args = append(args, "-race")
		}
		if err := goCmd(ctx, root, append(args, "./cmd/corral")...); err != nil {
			return report{}, err
		}
	}
	var pkgs []string
	seen := map[string]bool{}
	for _, b := range bs {
		if !seen[b.pkg] {
			seen[b.pkg] = true
			pkgs = append(pkgs, "./"+b.pkg)
		}
	}
	fmt.Fprintf(stdout, "benchtable: building the test binaries of %s\n", strings.Join(pkgs, " "))
	if err := goCmd(ctx, root, append([]string{"test", "-c", "-o", work + string(filepath.Separator)}, pkgs...)...); err != nil {
		return report{}, err
	}
	rep.BuildSeconds = time.Since(built).Seconds()

	env := benchEnv(os.Environ(), o.size, bin, race)
	for i, b := range bs {
		fmt.Fprintf(stdout, "benchtable: [%d/%d] %s (%s, make %s), load %s\n", i+1, len(bs), b.name, b.pkg, b.target, loadString(load1()))
		res := runOne(ctx, root, work, logs, b, o.size, env, o.verbose, stdout)
		rep.Benchmarks = append(rep.Benchmarks, res)
		status := "ok"
		if res.failed() {
			status = "FAILED"
		}
		fmt.Fprintf(stdout, "benchtable: [%d/%d] %s %s in %s: %d rows, load %s → %s\n", i+1, len(bs), b.name, status,
			(time.Duration(res.Seconds*10) * time.Second / 10), len(res.Rows), loadString(res.LoadStart), loadString(res.LoadEnd))
		if ctx.Err() != nil {
			break
		}
	}
	rep.Seconds = time.Since(rep.Started).Seconds()

	var md strings.Builder
	if err := rep.writeMarkdown(&md, labels(benches)); err != nil {
		return rep, err
	}
	var js strings.Builder
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false) // goals read ">= 0.8"
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return rep, err
	}
	for p, data := range map[string][]byte{abs(o.out): []byte(md.String()), abs(o.jsonOut): []byte(js.String())} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return rep, err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return rep, err
		}
	}
	fmt.Fprintf(stdout, "benchtable: wrote %s and %s\n", abs(o.out), abs(o.jsonOut))
	return rep, nil
}

// runOne runs one benchmark's test binary in its package's directory and
// reads its rows from its output as it goes.
func runOne(ctx context.Context, root, work, logs string, b bench, size string, env []string, verbose bool, stdout io.Writer) (res result) {
	res = result{Name: b.name, Package: b.pkg, Target: b.target, Log: filepath.Join(logs, b.name+".log"),
		LoadStart: load1()}
	args := b.args(size)
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	res.Command = "(cd " + b.pkg + " && CORRAL_BENCH=1 " + benchrow.SizeEnv + "=" + size + " " + b.binary() + " " + strings.Join(quoted, " ") + ")"
	start := time.Now()
	defer func() {
		res.Seconds = time.Since(start).Seconds()
		res.LoadEnd = load1()
		collect(b, &res)
	}()
	logf, err := os.Create(res.Log)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer logf.Close()
	var out io.Writer = logf
	if verbose {
		out = io.MultiWriter(logf, stdout)
	}
	// The test binary's own -test.timeout ends it first, with the
	// goroutines' stacks in the log; this is the backstop.
	rctx, cancel := context.WithTimeout(ctx, b.timeout[size]+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(rctx, filepath.Join(work, b.binary()), args...)
	cmd.Dir = filepath.Join(root, b.pkg)
	cmd.Env = env
	cmd.WaitDelay = 30 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	scanned := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		var first error
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(out, line)
			r, ok, err := benchrow.ParseLine(line)
			switch {
			case err != nil && first == nil:
				first = err
			case ok && err == nil:
				res.Rows = append(res.Rows, r)
			}
		}
		if err := sc.Err(); err != nil && first == nil {
			first = err
		}
		_, _ = io.Copy(io.Discard, pr) // a line too long: keep the binary writing
		scanned <- first
	}()
	runErr := cmd.Run()
	_ = pw.Close()
	scanErr := <-scanned
	switch {
	case runErr != nil:
		res.Err = fmt.Sprintf("%s: %v", res.Command, runErr)
	case scanErr != nil:
		res.Err = scanErr.Error()
	}
	return res
}

// shellQuote quotes a for a POSIX shell when it needs it.
func shellQuote(a string) string {
	if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=,:") == "" {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// controlPlane are the prefixes of the variables that name a shared
// control plane's services (scripts/*-up.sh, .ci/run): the benchmarks run
// on the simulator, never against those.
var controlPlane = []string{"IRONIC_", "OPENSTACK_", "NEUTRON_", "MARIADB_", "OS_", "KEYSTONE_", "GLANCE_",
	"ALICE_", "BOB_", "CAROL_", "SERVICE_PROJECT", "CORRAL_SERVICE_"}

// benchEnv is environ without the control plane's variables, with the
// benchmarks turned on at size, the corral binary bin and the race
// detector as bin was built.
func benchEnv(environ []string, size, bin string, race bool) []string {
	set := map[string]string{"CORRAL_BENCH": "1", benchrow.SizeEnv: size, "CORRAL_BIN": bin, "CORRAL_RACE": strconv.FormatBool(race)}
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; ok {
			continue
		}
		drop := false
		for _, p := range controlPlane {
			drop = drop || strings.HasPrefix(k, p)
		}
		if !drop {
			out = append(out, kv)
		}
	}
	for _, k := range []string{"CORRAL_BENCH", benchrow.SizeEnv, "CORRAL_BIN", "CORRAL_RACE"} {
		out = append(out, k+"="+set[k])
	}
	return out
}

// load1 is the 1-minute load average, -1 when unknown.
func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside corral's module: run it from the repository (make bench)")
	}
	return filepath.Dir(mod), nil
}

func goCmd(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	if args[0] == "build" && slices.Contains(args, "-race") {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func goVersion(ctx context.Context, root string) string {
	cmd := exec.CommandContext(ctx, "go", "env", "GOVERSION")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	return runtime.Version()
}

func commit(ctx context.Context, root string) string {
	cmd := exec.CommandContext(ctx, "git", "rev-parse", "--short=12", "HEAD")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	diff := exec.CommandContext(ctx, "git", "diff", "--quiet", "HEAD", "--")
	diff.Dir = root
	if diff.Run() != nil {
		c += "+dirty"
	}
	return c
}
