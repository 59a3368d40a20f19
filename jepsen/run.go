package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral-dev/corral/jepsen/check"
	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/cluster"
	"github.com/corral-dev/corral/jepsen/history"
	"github.com/corral-dev/corral/jepsen/internal/pace"
	"github.com/corral-dev/corral/jepsen/nemesis"
	"github.com/corral-dev/corral/jepsen/report"
	"github.com/corral-dev/corral/jepsen/workload"
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
	ir       *client.Ironic
	rc       string
	enrolled []string
	cl       *cluster.Cluster
	fw       *netem.Firewall
	once     sync.Once

	// -neutron: the ports the suite removes at the end (the user's, and
	// those corral made for the run's servers), as Neutron's admin.
	ntAdmin *client.Neutron
	ntMu    sync.Mutex
	ntPorts []string
}

// main carries the run out and returns the exit status; an interrupt
// heals and stops everything (a second one at once).
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
	report.Summary(os.Stdout, r.dir, v)
	return v.ExitCode()
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
		r.removePorts()
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

// startIronic starts the simulator, or enrolls the run's nodes in a real
// Ironic.
func (r *runner) startIronic(ctx context.Context, runID string) error {
	r.ir = &client.Ironic{HTTP: &http.Client{Timeout: 30 * time.Second}}
	if !r.cfg.RealIronic {
		r.rc = "baremetal-jepsen"
		p, u, err := cluster.StartSim(ctx, r.bin, r.cfg.Nodes, r.rc, filepath.Join(r.dir, "logs", "ironic-sim.log"), r.cfg.DeployDelay, r.cfg.PowerDelay)
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

// run sets the cluster up, runs the workload under the nemesis, heals,
// reads the final state and checks it all.
func (r *runner) run(ctx context.Context) (check.Verdict, error) {
	started := time.Now()
	families, _ := nemesis.ParseFamilies(r.cfg.Nemesis)
	variants, _ := nemesis.ParseVariants(r.cfg.Partitions)
	rng := rand.New(rand.NewSource(r.cfg.Seed))
	runID := fmt.Sprintf("%06x", rng.Intn(1<<24))
	r.logf("run %s: results in %s, seed %d, nemesis %v", runID, r.dir, r.cfg.Seed, families)
	var err error
	if r.tmp, err = os.MkdirTemp("", "corral-jepsen-"); err != nil {
		return check.Verdict{}, err
	}
	if err := os.Chmod(r.tmp, 0o755); err != nil {
		return check.Verdict{}, err
	}
	if err := r.build(ctx); err != nil {
		return check.Verdict{}, err
	}
	if err := r.startIronic(ctx, runID); err != nil {
		return check.Verdict{}, err
	}
	asUsers := os.Geteuid() == 0
	if nemesis.NeedsFirewall(families) && !asUsers {
		return check.Verdict{}, fmt.Errorf("partitions need root (iptables, and agents running as their own uids)")
	}
	token := "jepsen-" + client.NewUUID()
	r.cl, err = cluster.New(r.bin, r.tmp, filepath.Join(r.dir, "logs"), token, r.ir.URL, r.cfg.BaseIP, r.cfg.Peers, asUsers)
	if err != nil {
		return check.Verdict{}, err
	}
	var up *nemesis.Upgrade
	var upInfo *history.Upgrade
	if r.cfg.OldBin != "" {
		if up, upInfo, err = r.oldAgent(ctx); err != nil {
			return check.Verdict{}, err
		}
	}
	sec, err := r.cl.Secure(ctx, cluster.SecureOptions{TLS: r.cfg.TLS, GossipKey: nemesis.NeedsGossipKey(families),
		Keystone: r.cfg.Keystone, OpenStackEnv: r.cfg.OpenStackEnv, Neutron: r.cfg.Neutron, NeutronEnv: r.cfg.NeutronEnv,
		NeutronReapGrace: r.cfg.ReapGrace, Logf: r.logf})
	if err != nil {
		return check.Verdict{}, err
	}
	nets, err := r.userPorts(ctx, sec, runID)
	if err != nil {
		return check.Verdict{}, err
	}
	if nemesis.NeedsFirewall(families) {
		if r.fw, err = netem.New("JEPSEN"); err != nil {
			return check.Verdict{}, err
		}
	}
	if err := r.cl.Start(); err != nil {
		return check.Verdict{}, err
	}
	api := client.NewCorral(token, sec.TLS)
	probe := &cluster.Probe{Cl: r.cl, API: api, IR: r.ir, RC: r.rc}
	start := time.Now()
	if err := probe.WaitReady(ctx, r.cfg.Nodes, 90*time.Second); err != nil {
		return check.Verdict{}, err
	}
	r.logf("cluster of %d ready in %s (leader %s)", r.cfg.Peers, time.Since(start).Round(time.Millisecond), r.cl.Leader(ctx, api))
	fctx, fcancel := context.WithTimeout(ctx, 30*time.Second)
	err = api.CreateFlavor(fctx, probe.AnyURL(fctx), "jepsen", client.ResourceClass(r.rc))
	fcancel()
	if err != nil {
		return check.Verdict{}, err
	}

	rec, err := history.NewRecorder(filepath.Join(r.dir, history.HistoryFile))
	if err != nil {
		return check.Verdict{}, err
	}
	nem := &nemesis.Nemesis{Cl: r.cl, FW: r.fw, API: api, Rec: rec, Rng: rng, Families: families, Variants: variants,
		Fault: r.cfg.Fault, Heal: r.cfg.Heal, Logf: r.logf, Upgrade: up}
	runWorkload, mb := r.workload(&workload.Ops{Cl: r.cl, API: sec.ClientAPI(api), Rec: rec, Timeout: r.cfg.OpTimeout,
		Flavor: "jepsen", Image: r.cfg.Image, Nets: nets, BootEvery: bootEvery(nets, r.cfg.BootEvery),
		MaxBusy: maxBusy(nets, r.cfg.MaxBusy)}, api, nem)
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
	case r.cfg.Workload == history.WorkloadActions:
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
		return check.Verdict{}, err
	}
	if ctx.Err() != nil {
		return check.Verdict{}, ctx.Err()
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
	pace.Sleep(ctx, 2*time.Second) // a stray Ironic side effect would land now
	fs := probe.Collect(ctx)
	fs.Quiesced = quiet
	if sec.Neutron != nil {
		r.collectNeutron(ctx, probe, &fs, sec, nets, started, ops)
	}
	var effects client.EffectLog
	if r.cfg.Workload == history.WorkloadActions || sec.Neutron != nil {
		if effects, err = r.sideEffects(ctx, rec); err != nil {
			return check.Verdict{}, err
		}
	}
	if ctx.Err() != nil {
		return check.Verdict{}, ctx.Err()
	}
	windows := nem.Windows()
	run := check.RunInfo{Started: time.Now().Add(-rec.Since()).Format(time.RFC3339), Duration: r.cfg.Duration.String(), Workload: r.cfg.Workload,
		Nemesis: families, Seed: r.cfg.Seed, Clients: r.cfg.Clients, Peers: r.cfg.Peers,
		Ironic: "simulator", Nodes: r.cfg.Nodes, Corral: r.corralVersion(), Race: r.cfg.Race && r.cfg.CorralBin == ""}
	if r.cfg.RealIronic {
		run.Ironic = "real at " + r.ir.URL + " (class " + r.rc + ")"
	}
	var waves []history.Wave
	if mb != nil {
		waves = mb.WaveLog()
		run.Clients = r.cfg.WaveSize
		run.Duration = fmt.Sprintf("%d waves", len(waves))
		if len(waves) > 0 {
			run.Duration += " in " + time.Duration(waves[len(waves)-1].End).Round(time.Second).String()
		}
	}
	if upInfo != nil {
		if upInfo.Switches, err = r.cl.EncodingSwitches(rec.Start()); err != nil {
			return check.Verdict{}, fmt.Errorf("read the agents' logs: %w", err)
		}
		run.Upgrade = upInfo
	}
	run.Security, run.Auth = sec.Describe()
	run.Networks = sec.DescribeNeutron()
	ops, run.Injected = applyInjections(r.cfg, ops)
	if err := history.WriteJSON(filepath.Join(r.dir, history.FinalFile), fs); err != nil {
		return check.Verdict{}, err
	}
	races, err := r.cl.DataRaces()
	if err != nil {
		return check.Verdict{}, fmt.Errorf("read the agents' logs: %w", err)
	}
	v := check.All(check.Input{Ops: ops, Final: fs, Windows: windows, Waves: waves, Effects: effects, Recovery: recovery,
		RecoveryError: finalErr, HealError: healErr, Races: races, Run: run, VizDir: r.dir, Timeout: r.cfg.CheckTimeout})
	return v, report.Write(r.dir, v, ops, windows, waves, len(run.Injected) > 0)
}

// oldAgent puts the last agent on -old-bin (a copy of its own, which the
// upgrade replaces) and returns its upgrade.
func (r *runner) oldAgent(ctx context.Context) (*nemesis.Upgrade, *history.Upgrade, error) {
	a := r.cl.Agents[len(r.cl.Agents)-1]
	path := filepath.Join(r.tmp, "bin-"+a.Name, "corral")
	if err := cluster.Install(r.cfg.OldBin, path); err != nil {
		return nil, nil, fmt.Errorf("-old-bin: %w", err)
	}
	a.UseBinary(path)
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	info := &history.Upgrade{Agent: a.Name, From: "unknown"}
	out, err := exec.CommandContext(vctx, r.cfg.OldBin, "version", "-f", "json").Output()
	var v struct {
		Version   string   `json:"version"`
		Commit    string   `json:"commit"`
		Encodings []string `json:"entry_encodings"`
	}
	if err == nil && json.Unmarshal(out, &v) == nil {
		info.From = v.Version + " (" + v.Commit + ")"
		info.FromReadsMsgpack = slices.Contains(v.Encodings, "msgpack")
	}
	r.logf("%s starts on %s, %s (entry encodings %v), and is upgraded to this run's binary at the first fault due from %s on",
		a.Name, r.cfg.OldBin, info.From, v.Encodings, r.cfg.UpgradeAt)
	return &nemesis.Upgrade{Agent: a, At: r.cfg.UpgradeAt, Bin: r.bin}, info, nil
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

// workload is the run's workload on ops, by -workload: the mass boot
// (returned too, for its waves) waits for the nemesis's faults, the actions
// workload aims the nemesis at the owners of the servers it acts on
// (reading their owner with admin's token).
func (r *runner) workload(ops *workload.Ops, admin *client.Corral, nem *nemesis.Nemesis) (func(context.Context), *workload.MassBoot) {
	switch r.cfg.Workload {
	case history.WorkloadMassBoot:
		mb := &workload.MassBoot{Ops: ops, IR: r.ir, RC: r.rc, Waves: r.cfg.Waves, Size: r.cfg.WaveSize, Nodes: r.cfg.Nodes,
			Settle: r.cfg.WaveSettle, Hold: r.cfg.WaveHold, Logf: r.logf}
		if len(nem.Families) > 0 {
			mb.Faulty, mb.MaxWait = nem.Faulty, r.cfg.Fault+r.cfg.Heal+2*time.Second
		}
		return mb.Run, mb
	case history.WorkloadActions:
		a := &workload.Actions{Ops: ops, Clients: r.cfg.Clients, MaxLive: r.cfg.MaxLive, Seed: r.cfg.Seed,
			Actors: r.cfg.ActionClients, Admin: admin, Settle: workload.ActionSettle,
			StrikeMin: workload.StrikeMin, StrikeMax: workload.StrikeMax}
		nem.Aim, nem.AimWait = a.Aim, workload.AimWait
		return a.Run, nil
	}
	w := &workload.Mixed{Ops: ops, Clients: r.cfg.Clients, MaxLive: r.cfg.MaxLive, Seed: r.cfg.Seed}
	return w.Run, nil
}

// userPortEvery: one boot in userPortEvery is handed a user's port (while
// -neutron-user-ports last), the others ask for the network.
const userPortEvery = 4

// bootEvery is the boots' spacing: -neutron-boot-every with Neutron,
// none without.
func bootEvery(nets *workload.Networks, d time.Duration) time.Duration {
	if nets == nil {
		return 0
	}
	return d
}

// maxBusy is -neutron-max-busy with Neutron, no limit without.
func maxBusy(nets *workload.Networks, n int) int {
	if nets == nil {
		return 0
	}
	return n
}

// userPorts, with -neutron, makes the user's ports the boots are handed
// (-neutron-user-ports) and returns the boots' networks; nil without
// Neutron.
func (r *runner) userPorts(ctx context.Context, sec cluster.Security, runID string) (*workload.Networks, error) {
	if sec.Neutron == nil {
		return nil, nil
	}
	r.ntAdmin = sec.Neutron.Admin()
	start := time.Now()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	nets, err := workload.NewNetworks(pctx, sec.Neutron.User(), sec.Neutron.NetworkID, "jepsen-"+runID+"-port", r.cfg.UserPorts, userPortEvery)
	r.forgetLater(nets.UserPorts())
	if err != nil {
		return nil, fmt.Errorf("-neutron: %w", err)
	}
	r.logf("made %d ports of %s on %s in %s: one boot in %d gets one while they last", len(nets.UserPorts()), sec.Keystone.User,
		sec.Neutron.Network, time.Since(start).Round(time.Millisecond), nets.Every)
	return nets, nil
}

// collectNeutron gives the reaper its grace, then reads the run's ports
// and the servers' addresses into fs.Neutron, and notes the ports to
// remove at the end.
func (r *runner) collectNeutron(ctx context.Context, probe *cluster.Probe, fs *history.FinalState, sec cluster.Security,
	nets *workload.Networks, started time.Time, ops []history.Op) {
	nr := &cluster.NeutronRun{NT: sec.Neutron, Admin: r.ntAdmin, ProjectID: sec.KeystoneProject, Since: started,
		UserPorts: nets.UserPorts(), Grace: r.cfg.ReapGrace}
	known := history.ServerIDs(ops)
	ks := history.Set(known)
	for _, s := range fs.Servers {
		ks[s.ID] = true
	}
	reap := nr.AwaitReaped(ctx, *fs, ks)
	r.logf("Neutron: %d orphan ports after the quiescence, %.1fs given to the reaper", reap.OrphansBefore, reap.WaitedS)
	probe.CollectNeutron(ctx, fs, nr, known, reap)
	r.forgetLater(cluster.RunPorts(fs.Neutron))
}

// forgetLater adds ports to those removed at the end.
func (r *runner) forgetLater(ids []string) {
	r.ntMu.Lock()
	defer r.ntMu.Unlock()
	r.ntPorts = append(r.ntPorts, ids...)
}

// removePorts deletes the run's ports from Neutron (after the agents
// stopped), so that the shared Neutron is left as it was.
func (r *runner) removePorts() {
	r.ntMu.Lock()
	ids := slices.Compact(slices.Sorted(slices.Values(r.ntPorts)))
	r.ntPorts = nil
	r.ntMu.Unlock()
	if r.ntAdmin == nil || len(ids) == 0 {
		return
	}
	// A Neutron still working through the agents' last requests may take
	// minutes to answer: each delete gets a minute, and those that fail
	// a second try.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	left := ids
	var failed []string
	for try := 0; try < 2 && len(left) > 0; try++ {
		var again []string
		failed = nil
		for _, id := range left {
			dctx, dcancel := context.WithTimeout(ctx, time.Minute)
			err := r.ntAdmin.DeletePort(dctx, id)
			dcancel()
			if err != nil {
				again = append(again, id)
				failed = append(failed, fmt.Sprintf("%s: %v", id, err))
			}
		}
		left = again
	}
	r.logf("removed %d of the run's %d Neutron ports", len(ids)-len(left), len(ids))
	if len(failed) > 0 {
		r.logf("Neutron ports not removed (delete them as the admin): %s", strings.Join(failed, "; "))
	}
}

// sideEffects reads the simulator's side-effect log into side_effects.json.
func (r *runner) sideEffects(ctx context.Context, rec *history.Recorder) (client.EffectLog, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	l := r.ir.SideEffects(cctx, rec.Start())
	if l.Error != "" {
		r.logf("%s", l.Error)
	} else {
		r.logf("the simulator logged %d side effects", len(l.SideEffects))
	}
	if err := history.WriteJSON(filepath.Join(r.dir, history.EffectsFile), l); err != nil {
		return l, fmt.Errorf("write side_effects.json: %w", err)
	}
	return l, nil
}
