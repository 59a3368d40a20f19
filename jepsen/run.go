package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral-dev/corral/testkit/netem"
	"github.com/corral-dev/corral/testkit/proc"
)

// runner owns everything a run starts, so that it can all be undone.
type runner struct {
	cfg  Config
	dir  string
	logf func(string, ...any)

	tmp      string
	bin      string
	sim      *proc.Proc
	ir       *Ironic
	rc       string
	enrolled []string
	cl       *Cluster
	fw       *netem.Firewall
	once     sync.Once
}

func (r *runner) main() (code int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		n := 0
		for range sigs {
			n++
			r.logf("interrupted: healing and stopping (again to force)")
			cancel()
			if n > 1 {
				r.cleanup()
				os.Exit(130)
			}
		}
	}()
	defer r.cleanup()
	defer func() {
		if p := recover(); p != nil {
			r.cleanup()
			panic(p)
		}
	}()
	v, err := r.run(ctx)
	if err != nil {
		r.logf("run failed: %v", err)
		if ctx.Err() != nil {
			return 130
		}
		return 2
	}
	printSummary(os.Stdout, r.dir, v)
	return exitCode(v)
}

// exitCode: 2 when a fault did not happen as scheduled (the run tested
// something else than it says), 1 when a checker found a violation, 0
// when the run is valid.
func exitCode(v Verdict) int {
	switch {
	case !v.Faults.Valid:
		return 2
	case !v.Valid:
		return 1
	}
	return 0
}

// cleanup heals every fault and stops everything the run started.
func (r *runner) cleanup() {
	r.once.Do(func() {
		if r.fw != nil {
			if err := r.fw.Close(); err != nil {
				r.logf("remove the partition rules (check `iptables -S`): %v", err)
			}
		}
		if r.cl != nil {
			if err := r.cl.Stop(); err != nil {
				r.logf("stop the agents: %v", err)
			}
		}
		if r.ir != nil && len(r.enrolled) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			if err := r.ir.Cleanup(ctx, r.rc, r.enrolled); err != nil {
				r.logf("Ironic cleanup: %v", err)
			}
			cancel()
		}
		if r.sim != nil {
			if err := r.sim.Kill(); err != nil {
				r.logf("stop the Ironic simulator: %v", err)
			}
		}
		if r.tmp != "" && !r.cfg.KeepData {
			_ = os.RemoveAll(r.tmp)
		}
	})
}

// build compiles corral, with the race detector when -race (default:
// CORRAL_RACE=1 or CI=true) asks for it.
func (r *runner) build(ctx context.Context) error {
	if r.cfg.CorralBin != "" {
		r.bin = r.cfg.CorralBin
		return nil
	}
	r.bin = filepath.Join(r.tmp, "corral")
	start := time.Now()
	if err := proc.Build(ctx, r.cfg.CorralDir, "./cmd/corral", r.bin, r.cfg.Race); err != nil {
		return err
	}
	r.logf("built corral (%s, race detector %v) in %s", r.corralVersion(), r.cfg.Race, time.Since(start).Round(time.Millisecond))
	return nil
}

func (r *runner) startIronic(ctx context.Context, runID string) error {
	r.ir = &Ironic{HTTP: &http.Client{Timeout: 30 * time.Second}}
	if !r.cfg.RealIronic {
		r.rc = "baremetal-jepsen"
		p, u, err := StartSim(ctx, r.bin, r.cfg.Nodes, r.rc, filepath.Join(r.dir, "logs", "ironic-sim.log"), r.cfg.DeployDelay, r.cfg.PowerDelay)
		if err != nil {
			return err
		}
		r.sim, r.ir.URL = p, u
		r.logf("Ironic simulator at %s with %d nodes (deploys take %s, power changes %s)", u, r.cfg.Nodes, r.cfg.DeployDelay, r.cfg.PowerDelay)
		return nil
	}
	// A class of our own keeps other users' nodes (and leftovers of an
	// interrupted run) out of the way.
	r.rc = "baremetal-jepsen-" + runID
	r.ir.URL = strings.TrimRight(r.cfg.IronicURL, "/")
	start := time.Now()
	ectx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	ids, err := r.ir.Enroll(ectx, "jepsen-"+runID, r.rc, r.cfg.Nodes)
	r.enrolled = ids
	if err != nil {
		return fmt.Errorf("enroll nodes in %s: %w", r.ir.URL, err)
	}
	r.logf("enrolled %d nodes of class %s in %s in %s", len(ids), r.rc, r.ir.URL, time.Since(start).Round(time.Millisecond))
	return nil
}

func (r *runner) run(ctx context.Context) (Verdict, error) {
	families, _ := ParseFamilies(r.cfg.Nemesis)
	variants, _ := ParseVariants(r.cfg.Partitions)
	rng := rand.New(rand.NewSource(r.cfg.Seed))
	runID := fmt.Sprintf("%06x", rng.Intn(1<<24))
	r.logf("run %s: results in %s, seed %d, nemesis %v", runID, r.dir, r.cfg.Seed, families)
	var err error
	if r.tmp, err = os.MkdirTemp("", "corral-jepsen-"); err != nil {
		return Verdict{}, err
	}
	if err := os.Chmod(r.tmp, 0o755); err != nil {
		return Verdict{}, err
	}
	if err := r.build(ctx); err != nil {
		return Verdict{}, err
	}
	if err := r.startIronic(ctx, runID); err != nil {
		return Verdict{}, err
	}
	asUsers := os.Geteuid() == 0
	if NeedsFirewall(families) && !asUsers {
		return Verdict{}, fmt.Errorf("partitions need root (iptables, and agents running as their own uids)")
	}
	token := "jepsen-" + newUUID()
	r.cl, err = NewCluster(r.bin, r.tmp, filepath.Join(r.dir, "logs"), token, r.ir.URL, r.cfg.BaseIP, r.cfg.Peers, asUsers)
	if err != nil {
		return Verdict{}, err
	}
	sec, err := r.secure(ctx, families)
	if err != nil {
		return Verdict{}, err
	}
	if NeedsFirewall(families) {
		if r.fw, err = netem.New("JEPSEN"); err != nil {
			return Verdict{}, err
		}
	}
	if err := r.cl.Start(); err != nil {
		return Verdict{}, err
	}
	api := NewCorral(token, sec.tls)
	probe := &Probe{Cl: r.cl, API: api, IR: r.ir, RC: r.rc}
	start := time.Now()
	if err := probe.WaitReady(ctx, r.cfg.Nodes, 90*time.Second); err != nil {
		return Verdict{}, err
	}
	r.logf("cluster of %d ready in %s (leader %s)", r.cfg.Peers, time.Since(start).Round(time.Millisecond), r.cl.Leader(ctx, api))
	fctx, fcancel := context.WithTimeout(ctx, 30*time.Second)
	err = api.CreateFlavor(fctx, probe.anyURL(fctx), "jepsen", normalizeRC(r.rc))
	fcancel()
	if err != nil {
		return Verdict{}, err
	}

	rec, err := NewRecorder(filepath.Join(r.dir, "history.jsonl"))
	if err != nil {
		return Verdict{}, err
	}
	wl := &Workload{Cl: r.cl, API: sec.clientAPI(api), Rec: rec, Clients: r.cfg.Clients, Timeout: r.cfg.OpTimeout,
		MaxLive: r.cfg.MaxLive, Flavor: "jepsen", Image: r.cfg.Image, Seed: r.cfg.Seed}
	runWorkload := wl.Run
	var mb *MassBoot
	if r.cfg.Workload == WorkloadMassBoot {
		mb = &MassBoot{Cl: r.cl, API: sec.clientAPI(api), IR: r.ir, RC: r.rc, Rec: rec, Waves: r.cfg.Waves,
			Size: r.cfg.WaveSize, Nodes: r.cfg.Nodes, Timeout: r.cfg.OpTimeout, Settle: r.cfg.WaveSettle, Hold: r.cfg.WaveHold,
			Flavor: "jepsen", Image: r.cfg.Image, Logf: r.logf}
		runWorkload = mb.Run
	}
	nem := &Nemesis{Cl: r.cl, FW: r.fw, API: api, Rec: rec, Rng: rng, Families: families, Variants: variants,
		Fault: r.cfg.Fault, Heal: r.cfg.Heal, Logf: r.logf}
	if mb != nil && len(families) > 0 {
		mb.Faulty, mb.MaxWait = nem.Faulty, r.cfg.Fault+r.cfg.Heal+2*time.Second
	}
	if r.cfg.Workload == WorkloadActions {
		runWorkload = r.actions(wl, api, nem)
	}
	wctx, wcancel := context.WithTimeout(ctx, r.cfg.Duration)
	var wg sync.WaitGroup
	wg.Add(2)
	// The nemesis stops when the workload does (the mixed workload runs
	// for -duration, the mass boot until its last wave).
	go func() { defer wg.Done(); runWorkload(wctx); wcancel() }()
	go func() { defer wg.Done(); nem.Run(wctx, r.cfg.Duration) }()
	switch {
	case mb != nil:
		r.logf("workload: massboot, %d waves of %d boots for %d nodes (at most %s)", r.cfg.Waves, r.cfg.WaveSize, r.cfg.Nodes, r.cfg.Duration)
	case r.cfg.Workload == WorkloadActions:
		r.logf("workload: actions, %d clients booting and deleting, %d acting, for %s", r.cfg.Clients, r.cfg.ActionClients, r.cfg.Duration)
	default:
		r.logf("workload: %d clients for %s", r.cfg.Clients, r.cfg.Duration)
	}
	wg.Wait()
	wcancel()
	healErr := ""
	if err := nem.HealAll(); err != nil {
		healErr = err.Error()
	}
	if err := rec.Close(); err != nil {
		return Verdict{}, err
	}
	if ctx.Err() != nil {
		return Verdict{}, ctx.Err()
	}
	ops := rec.Ops()
	r.logf("workload done: %d history events; healed, waiting for recovery", len(ops))

	recovery, rerr := probe.Recover(ctx, r.cfg.RecoverTimeout)
	finalErr := ""
	if rerr != nil {
		finalErr = rerr.Error()
	}
	r.logf("recovery after the last heal: %s %s", recovery.Round(time.Millisecond), finalErr)
	quiet, why := probe.Quiesce(ctx, r.cfg.QuiesceTimeout)
	r.logf("quiesced: %v %s", quiet, why)
	sleepCtx(ctx, 2*time.Second) // a stray Ironic side effect would land now
	fs := probe.Collect(ctx)
	fs.Quiesced = quiet
	var effects EffectLog
	if r.cfg.Workload == WorkloadActions {
		if effects, err = r.sideEffects(ctx, rec); err != nil {
			return Verdict{}, err
		}
	}
	if ctx.Err() != nil {
		return Verdict{}, ctx.Err()
	}
	windows := nem.Windows()
	run := RunInfo{Started: time.Now().Add(-rec.Since()).Format(time.RFC3339), Duration: r.cfg.Duration.String(), Workload: r.cfg.Workload,
		Nemesis: families, Seed: r.cfg.Seed, Clients: r.cfg.Clients, Peers: r.cfg.Peers,
		Ironic: "simulator", Nodes: r.cfg.Nodes, Corral: r.corralVersion(), Race: r.cfg.Race && r.cfg.CorralBin == ""}
	if r.cfg.RealIronic {
		run.Ironic = "real at " + r.ir.URL + " (class " + r.rc + ")"
	}
	var waves []Wave
	if mb != nil {
		waves = mb.WaveLog()
		run.Clients = r.cfg.WaveSize
		run.Duration = fmt.Sprintf("%d waves", len(waves))
		if len(waves) > 0 {
			run.Duration += " in " + time.Duration(waves[len(waves)-1].End).Round(time.Second).String()
		}
	}
	run.Security, run.Auth = sec.describe()
	ops, run.Injected = applyInjections(r.cfg, ops)
	if err := writeJSON(filepath.Join(r.dir, "final.json"), fs); err != nil {
		return Verdict{}, err
	}
	races, err := r.cl.DataRaces()
	if err != nil {
		return Verdict{}, fmt.Errorf("read the agents' logs: %w", err)
	}
	v := checkAll(ops, fs, windows, waves, effects, recovery, finalErr, healErr, races, r.dir, run, r.cfg.CheckTimeout)
	return v, writeResults(r.dir, v, ops, windows, waves, len(run.Injected) > 0)
}

// corralVersion names the source the binary was built from.
func (r *runner) corralVersion() string {
	cmd := exec.Command("git", "describe", "--always", "--dirty", "--tags")
	cmd.Dir = r.cfg.CorralDir
	out, err := cmd.Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// normalizeRC is Placement's spelling of an Ironic resource class.
func normalizeRC(raw string) string {
	var b strings.Builder
	for _, c := range strings.ToUpper(raw) {
		if c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if !strings.HasPrefix(s, "CUSTOM_") {
		s = "CUSTOM_" + s
	}
	return s
}

// checkAll runs every checker. healErr is the error of the heal after
// the workload; races are the agents' data race reports by agent.
func checkAll(ops []Op, fs FinalState, windows []Window, waves []Wave, effects EffectLog, recovery time.Duration, finalErr, healErr string,
	races map[string][]string, dir string, run RunInfo, timeout time.Duration) Verdict {
	ix := indexHistory(ops)
	v := Verdict{Run: run, Windows: windows, OpCounts: countOps(ix.Pairs), DataRaces: races}
	v.Linearizable = CheckLinearizable(ix, false, timeout, dir)
	v.DefaultReads = CheckLinearizable(ix, true, timeout, "")
	v.Final = CheckFinal(ix, fs)
	v.Availability = CheckAvailability(ix, windows, recovery, finalErr)
	v.Faults = CheckFaults(ix, windows, healErr)
	v.Valid = v.Faults.Valid && v.Linearizable.Valid && v.Final.Valid && v.Availability.Valid && len(races) == 0
	if run.Workload == WorkloadMassBoot {
		m := CheckMassBoot(waves, run.Nodes, fs)
		v.MassBoot = &m
		v.Valid = v.Valid && m.Valid
	}
	if run.Workload == WorkloadActions {
		a := CheckActions(ix, effects, fs, windows)
		v.Actions = &a
		v.Valid = v.Valid && a.Valid
	}
	return v
}

func writeResults(dir string, v Verdict, ops []Op, windows []Window, waves []Wave, injected bool) error {
	if injected {
		if err := WriteHistory(filepath.Join(dir, "history.jsonl"), ops); err != nil {
			return err
		}
	}
	if err := writeJSON(filepath.Join(dir, "windows.json"), windows); err != nil {
		return err
	}
	if v.Run.Workload == WorkloadMassBoot {
		if err := writeJSON(filepath.Join(dir, "waves.json"), waves); err != nil {
			return err
		}
	}
	if err := writeJSON(filepath.Join(dir, "verdict.json"), v); err != nil {
		return err
	}
	if err := WriteReport(dir, v); err != nil {
		return err
	}
	return PlotLatency(filepath.Join(dir, "latency.png"), Pairs(ops), windows)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func printSummary(w io.Writer, dir string, v Verdict) {
	fmt.Fprintf(w, "\nlinearizability: %v (%d servers, %d ops, %d illegal %s)\n", v.Linearizable.Valid,
		v.Linearizable.Keys, v.Linearizable.Ops, len(v.Linearizable.Illegal), causes(v.Linearizable.Causes))
	fmt.Fprintf(w, "default reads (informational): %v (%d illegal)\n", v.DefaultReads.Valid, len(v.DefaultReads.Illegal))
	if v.Run.Security != "" || v.Run.Auth != "" {
		fmt.Fprintf(w, "transport: %s; auth: %s\n", v.Run.Security, v.Run.Auth)
	}
	fmt.Fprintf(w, "final state: %v %v\n", v.Final.Valid, v.Final.Counts)
	if m := v.MassBoot; m != nil {
		fmt.Fprintf(w, "massboot: %v (%s) %v\n", m.Valid, massSummary(m), m.Counts)
	}
	if a := v.Actions; a != nil {
		fmt.Fprintf(w, "actions: %v (%s) %v\n", a.Valid, actionSummary(a), a.Counts)
	}
	fmt.Fprintf(w, "availability: %v (writes %.1f%% ok, recovery %.1fs)\n", v.Availability.Valid,
		100*v.Availability.Overall.WriteAvail, v.Availability.FinalRecoveryS)
	fmt.Fprintf(w, "faults: %v (%d windows, %d not injected or not healed, %d felt by no operation)\n", v.Faults.Valid,
		len(v.Windows), len(v.Faults.Failed), len(v.Faults.Unfelt))
	for _, f := range v.Faults.Failed {
		fmt.Fprintf(w, "  fault %d %s %s: %s\n", f.Window, f.Name, f.Detail, f.Problem)
	}
	if v.Faults.FinalHealError != "" {
		fmt.Fprintf(w, "  final heal: %s\n", v.Faults.FinalHealError)
	}
	if len(v.DataRaces) > 0 {
		fmt.Fprintf(w, "data races: %s\n", raceSummary(v.DataRaces))
	}
	word := "VALID"
	switch {
	case !v.Faults.Valid:
		word = "NOT A VALID RUN (a fault did not happen as scheduled)"
	case !v.Valid:
		word = "INVALID"
	}
	fmt.Fprintf(w, "verdict: %s — %s\n", word, filepath.Join(dir, "report.md"))
}

// security is what a run's agents and clients use beyond plain HTTP and
// static tokens.
type security struct {
	tls          *tls.Config // nil: plain HTTP
	gossipKey    bool
	ks           *Keystone
	ksToken      string // the workload user's token
	keystoneSkip string // why -keystone was not honoured
}

// secure sets up -tls (a CA and certificates from `corral tls`), gossip
// encryption (with -tls, or for the keyrotate nemesis, a key from `corral
// keygen`) and -keystone, and writes the agents' configuration files.
func (r *runner) secure(ctx context.Context, families []string) (security, error) {
	var sec security
	var pki *PKI
	var key string
	var err error
	if r.cfg.TLS {
		if pki, err = MakePKI(ctx, r.bin, filepath.Join(r.tmp, "pki"), r.cl.Agents); err != nil {
			return sec, fmt.Errorf("make the run's CA and certificates: %w", err)
		}
		if sec.tls, err = pki.ClientTLS(); err != nil {
			return sec, err
		}
	}
	if r.cfg.TLS || NeedsGossipKey(families) {
		out, err := corralCmd(ctx, r.bin, r.tmp, nil, "keygen")
		if err != nil {
			return sec, err
		}
		key, sec.gossipKey = strings.TrimSpace(out), true
	}
	if r.cfg.Keystone {
		ks, skip, err := keystoneFromConfig(r.cfg)
		if err != nil {
			return sec, err
		}
		sec.keystoneSkip = skip
		if skip != "" {
			r.logf("-keystone skipped: %s", skip)
		} else {
			tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			sec.ksToken, err = ks.Token(tctx, &http.Client{})
			cancel()
			if err != nil {
				return sec, fmt.Errorf("-keystone: %w (is the control plane of %s up?)", err, r.cfg.OpenStackEnv)
			}
			sec.ks = ks
			r.logf("Keystone at %s: agents validate tokens as %s; the workload runs as %s in %s", ks.AuthURL, ks.ServiceUser, ks.User, ks.Project)
		}
	}
	if pki == nil && key == "" && sec.ks == nil {
		return sec, nil
	}
	return sec, r.cl.Configure(pki, key, sec.ks)
}

// keystoneFromConfig reads -openstack-env. A missing env file is not an
// error: the run goes on with static tokens and says why ("skip").
func keystoneFromConfig(cfg Config) (*Keystone, string, error) {
	if cfg.OpenStackEnv == "" {
		return nil, "OPENSTACK_ENV is not set: start a control plane with scripts/openstack-up.sh and set OPENSTACK_ENV (or -openstack-env) to the env file it prints", nil
	}
	if _, err := os.Stat(cfg.OpenStackEnv); err != nil {
		return nil, fmt.Sprintf("no OpenStack env file %s (%v): start the control plane with scripts/openstack-up.sh", cfg.OpenStackEnv, err), nil
	}
	env, err := ReadEnvFile(cfg.OpenStackEnv)
	if err != nil {
		return nil, "", err
	}
	ks, err := KeystoneFromEnv(env)
	return ks, "", err
}

// clientAPI is the workload's client: the admin's, or one with the
// Keystone user's token.
func (s security) clientAPI(admin *Corral) *Corral {
	if s.ks == nil {
		return admin
	}
	return NewCorral(s.ksToken, s.tls)
}

// describe names the transport and the clients' credentials for the
// report.
func (s security) describe() (string, string) {
	transport := "HTTP"
	if s.tls != nil {
		transport = "TLS (API with client certificates, raft, forwarding)"
	}
	if s.gossipKey {
		transport += ", encrypted gossip"
	} else {
		transport += ", gossip in clear"
	}
	auth := "a static admin token"
	switch {
	case s.ks != nil:
		auth = fmt.Sprintf("Keystone tokens of %s (member of %s); the suite's own reads use a static admin token", s.ks.User, s.ks.Project)
	case s.keystoneSkip != "":
		auth += " (-keystone skipped: " + s.keystoneSkip + ")"
	}
	return transport, auth
}
