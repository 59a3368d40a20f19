// Command jepsen is corral's fault-injection and partition test suite. It
// builds corral, runs a cluster of real agents on 127.0.10.x against an
// Ironic (the simulator, or a real one), drives a concurrent workload of
// boots, deletes, shows and lists while a nemesis kills, pauses,
// partitions the agents and rotates their gossip key, then checks the
// recorded history and the final state. With -tls everything speaks TLS
// (certificates from the binary's own `corral tls`); with -keystone the
// workload authenticates with Keystone tokens. It talks to corral and
// Ironic only over HTTP; its processes and partitions come from corral's
// testkit/proc and testkit/netem, which hold none of corral's internals.
// Exit status: 0 when every checker is valid, 1 when one is not, 2 when
// the run itself failed, including a run in which a fault could not be
// injected or healed, 130 when interrupted.
//
// This package holds the command line (main.go), the run (run.go) and
// -recheck (recheck.go); the suite's parts are packages by role: cluster,
// client, workload, nemesis, history, check and report (README, "Layout").
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/corral-dev/corral/jepsen/history"
	"github.com/corral-dev/corral/jepsen/nemesis"
	"github.com/corral-dev/corral/testkit/proc"
)

// Config is the command line.
type Config struct {
	Duration       time.Duration
	Nemesis        string
	Partitions     string
	Fault, Heal    time.Duration
	Clients        int
	OpTimeout      time.Duration
	Peers          int
	BaseIP         string
	Nodes          int
	MaxLive        int
	RealIronic     bool
	IronicURL      string
	Image          string
	Results        string
	Seed           int64
	CorralDir      string
	CorralBin      string
	InjectLostAck  bool
	InjectResurrec bool
	Recheck        string
	QuiesceTimeout time.Duration
	RecoverTimeout time.Duration
	CheckTimeout   time.Duration
	KeepData       bool
	Race           bool
	TLS            bool
	Keystone       bool
	OpenStackEnv   string
	Neutron        bool
	NeutronEnv     string
	UserPorts      int
	ReapGrace      time.Duration
	BootEvery      time.Duration
	MaxBusy        int
	Workload       string
	Waves          int
	WaveSize       int
	WaveSettle     time.Duration
	WaveHold       time.Duration
	ActionClients  int
	DeployDelay    time.Duration
	PowerDelay     time.Duration
	OldBin         string
	UpgradeAt      time.Duration
}

func parseFlags(args []string) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("jepsen", flag.ContinueOnError)
	fs.DurationVar(&c.Duration, "duration", 150*time.Second, "how long the workload runs")
	fs.StringVar(&c.Nemesis, "nemesis", "kill,pause,partition", "fault families: kill,pause,partition,leader,wipe,restart,combo, all, or none")
	fs.StringVar(&c.Partitions, "partitions", "", "partition variants to draw from: isolate-one,majority-minority,isolate-leader,bridge (empty: all)")
	fs.DurationVar(&c.Fault, "fault", 10*time.Second, "how long each fault lasts")
	fs.DurationVar(&c.Heal, "heal", 10*time.Second, "healthy time between faults")
	fs.IntVar(&c.Clients, "clients", 10, "concurrent clients")
	fs.DurationVar(&c.OpTimeout, "op-timeout", 5*time.Second, "client timeout of one request (a write that times out has an unknown outcome)")
	fs.IntVar(&c.Peers, "peers", 5, "corral agents")
	fs.StringVar(&c.BaseIP, "base-ip", "127.0.10.2", "address of the first agent; the others follow")
	fs.IntVar(&c.Nodes, "nodes", 48, "Ironic nodes")
	fs.IntVar(&c.MaxLive, "max-live", 20, "clients boot less above this many live servers")
	fs.BoolVar(&c.RealIronic, "real-ironic", false, "use the real Ironic at -ironic-url / $IRONIC_URL instead of the simulator")
	fs.StringVar(&c.IronicURL, "ironic-url", os.Getenv("IRONIC_URL"), "root URL of a real Ironic (implies -real-ironic)")
	fs.StringVar(&c.Image, "image", "", "imageRef of every boot (default: img with the simulator, http://127.0.0.1/jepsen.qcow2 with a real Ironic, which wants a URL or a Glance UUID)")
	fs.StringVar(&c.Results, "results", "results", "directory that gets one folder per run")
	fs.Int64Var(&c.Seed, "seed", 0, "random seed (0: from the clock)")
	fs.StringVar(&c.CorralDir, "corral-dir", "..", "corral's main module, where ./cmd/corral is built")
	fs.StringVar(&c.CorralBin, "corral-bin", "", "use this corral binary instead of building one")
	fs.BoolVar(&c.InjectLostAck, "inject-lost-ack", false, "add an acknowledged boot that never happened to the history (the run must then fail)")
	fs.BoolVar(&c.InjectResurrec, "inject-resurrection", false, "add a read showing a deleted server alive to the history (the run must then fail)")
	fs.StringVar(&c.Recheck, "recheck", "", "re-run the checkers on an earlier results folder (writing into its recheck/ folder) instead of running")
	fs.DurationVar(&c.QuiesceTimeout, "quiesce-timeout", 90*time.Second, "how long to wait after the heal for builds and deletes to finish")
	fs.DurationVar(&c.RecoverTimeout, "recover-timeout", 60*time.Second, "how long the cluster may take to serve writes after the last heal")
	fs.DurationVar(&c.CheckTimeout, "check-timeout", 30*time.Second, "linearizability search budget per server")
	fs.BoolVar(&c.KeepData, "keep-data", false, "keep the agents' data directories")
	fs.BoolVar(&c.Race, "race", proc.RaceFromEnv(), "build corral with the race detector (default from CORRAL_RACE, or CI=true); a data race in an agent's log fails the run")
	fs.BoolVar(&c.TLS, "tls", false, "TLS everywhere: a CA and per-peer certificates from corral tls, agents with [tls] (verify_incoming) and [gossip] encrypt, clients over HTTPS with a client certificate")
	fs.BoolVar(&c.Keystone, "keystone", false, "agents with [auth] strategy = keystone, the workload as a Keystone member user (alice, demo-a); needs -openstack-env (skipped, with a message, without it)")
	fs.StringVar(&c.OpenStackEnv, "openstack-env", os.Getenv("OPENSTACK_ENV"), "env file of scripts/openstack-up.sh (default $OPENSTACK_ENV), for -keystone")
	fs.BoolVar(&c.Neutron, "neutron", false, "agents with [neutron], every boot on Neutron's shared network (some with a port of the user's), Neutron's ports checked after the run; needs -keystone and -neutron-env (skipped, with a message, without it)")
	fs.StringVar(&c.NeutronEnv, "neutron-env", os.Getenv("NEUTRON_ENV"), "env file of scripts/neutron-up.sh (default $NEUTRON_ENV), for -neutron")
	fs.IntVar(&c.UserPorts, "neutron-user-ports", 12, "-neutron: ports the user makes before the run; one boot in 4 is handed one ({\"port\": ID}) while they last")
	fs.DurationVar(&c.ReapGrace, "neutron-reap-grace", time.Minute, "-neutron: the agents' [neutron] port_reap_grace (at least 1m), the leader's reaper's grace for ports whose server is gone; the check waits it (plus 20s) for orphans to go")
	fs.DurationVar(&c.BootEvery, "neutron-boot-every", 5*time.Second, "-neutron: at most one boot this often and one delete four times as seldom (one asked for sooner is a list or show instead): every boot makes Neutron bind a port, which a loaded Neutron does slowly")
	fs.IntVar(&c.MaxBusy, "neutron-max-busy", 3, "-neutron: no boot while the last linearizable list showed this many servers building or being deleted (counting the boots sent since); 0: no limit")
	fs.StringVar(&c.Workload, "workload", history.WorkloadMixed, "mixed: clients boot, delete, show and list at random; massboot: waves of -wave-size simultaneous boots, then deletes of them all; actions: boots and deletes plus stop, start, reboot and rebuild, faults aimed at the owners of servers with an action just accepted")
	fs.IntVar(&c.ActionClients, "action-clients", 6, "actions: clients sending server actions (beside -clients booting, deleting, showing and listing)")
	fs.DurationVar(&c.DeployDelay, "deploy-delay", 200*time.Millisecond, "simulator: how long a deploy, rebuild or undeploy takes (actions: 3s)")
	fs.DurationVar(&c.PowerDelay, "power-delay", 0, "simulator: how long a power change takes (actions: 2s)")
	fs.IntVar(&c.Waves, "waves", 3, "massboot: number of waves (the last one is left standing for the final-state check)")
	fs.IntVar(&c.WaveSize, "wave-size", 200, "massboot: boots sent at once in each wave")
	fs.DurationVar(&c.WaveSettle, "wave-settle", 60*time.Second, "massboot: how long a wave may take to leave BUILD, or to be deleted")
	fs.DurationVar(&c.WaveHold, "wave-hold", 15*time.Second, "massboot: how long a settled wave stays up under the nemesis before its deletes (a second snapshot follows)")
	fs.StringVar(&c.OldBin, "old-bin", "", "a corral binary of an earlier release: the last agent starts on it and is upgraded to the run's binary at -upgrade-at (stopped, its binary replaced, started again on its data dir), so that the run holds a cluster of mixed versions and its switch to what the newer release writes")
	fs.DurationVar(&c.UpgradeAt, "upgrade-at", 0, "-old-bin: when the old agent is upgraded, as the first fault due from then on (default: half of -duration)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch c.Workload {
	case history.WorkloadMixed:
	case history.WorkloadMassBoot:
		// Defaults of their own: contention (more boots than nodes), room
		// for 200 requests at once on the agents, and the waves decide
		// when the run ends (-duration is then only a cap).
		if !c.Flag(fs, "nodes") {
			c.Nodes = 150
		}
		if !c.Flag(fs, "op-timeout") {
			c.OpTimeout = 20 * time.Second
		}
		if !c.Flag(fs, "duration") {
			c.Duration = 10 * time.Minute
		}
		if c.Waves < 1 || c.WaveSize < 1 {
			return c, fmt.Errorf("-workload massboot needs -waves and -wave-size of at least 1")
		}
	case history.WorkloadActions:
		// Servers that live long enough to be acted on, actions that take
		// long enough to be caught by a fault, and the partitions that cut
		// an owner off from the other peers (Ironic stays reachable).
		defaults := map[string]func(){
			"clients":      func() { c.Clients = 2 },
			"max-live":     func() { c.MaxLive = 16 },
			"duration":     func() { c.Duration = 120 * time.Second },
			"deploy-delay": func() { c.DeployDelay = 3 * time.Second },
			"power-delay":  func() { c.PowerDelay = 2 * time.Second },
			"partitions":   func() { c.Partitions = "isolate-one,majority-minority" },
		}
		for name, set := range defaults {
			if !c.Flag(fs, name) {
				set()
			}
		}
		if c.ActionClients < 1 {
			return c, fmt.Errorf("-workload actions needs -action-clients of at least 1")
		}
	default:
		return c, fmt.Errorf("-workload %q is unknown: use %s, %s or %s", c.Workload, history.WorkloadMixed, history.WorkloadMassBoot, history.WorkloadActions)
	}
	if _, err := nemesis.ParseFamilies(c.Nemesis); err != nil {
		return c, err
	}
	if _, err := nemesis.ParseVariants(c.Partitions); err != nil {
		return c, err
	}
	if c.Flag(fs, "ironic-url") || (c.RealIronic && c.IronicURL != "") {
		c.RealIronic = true
	} else if !c.RealIronic {
		c.IronicURL = ""
	}
	if c.RealIronic && c.Workload == history.WorkloadActions {
		return c, fmt.Errorf("-workload actions checks the Ironic simulator's side-effect log: it does not run with -real-ironic")
	}
	if c.Neutron {
		// Every boot and delete now waits on Neutron (the API checks the
		// networks, the owner makes, binds and deletes ports): fewer
		// clients, and room for a slow Neutron before a boot's outcome
		// becomes unknown.
		if !c.Flag(fs, "clients") && c.Workload == history.WorkloadMixed {
			c.Clients = 4
		}
		if !c.Flag(fs, "op-timeout") && c.OpTimeout < 15*time.Second {
			c.OpTimeout = 15 * time.Second
		}
	}
	if c.Neutron && !c.Keystone {
		return c, fmt.Errorf("-neutron needs -keystone: the ports are the Keystone project's of the booting user, who also makes the user ports, and the agents reach Neutron as a service user of that Keystone")
	}
	if c.Neutron && c.Workload == history.WorkloadMassBoot {
		return c, fmt.Errorf("-neutron does not run with -workload massboot: hundreds of simultaneous port bindings are more than the loopback Neutron takes")
	}
	if c.Neutron && c.RealIronic {
		return c, fmt.Errorf("-neutron runs with the Ironic simulator: a real Ironic would need the flat network interface and a [neutron] of its own")
	}
	if c.UserPorts < 0 {
		return c, fmt.Errorf("-neutron-user-ports must not be negative")
	}
	if c.RealIronic && c.IronicURL == "" {
		return c, fmt.Errorf("-real-ironic needs -ironic-url or IRONIC_URL (e.g. IRONIC_URL=$(../scripts/ironic-up.sh))")
	}
	if c.OldBin != "" {
		if c.Workload == history.WorkloadMassBoot {
			return c, fmt.Errorf("-old-bin runs with the mixed and actions workloads: the mass boot's waves decide when it ends")
		}
		if !c.Flag(fs, "upgrade-at") {
			c.UpgradeAt = c.Duration / 2
		}
		if c.UpgradeAt < 0 || c.UpgradeAt+2*(c.Fault+c.Heal) > c.Duration {
			return c, fmt.Errorf("-upgrade-at %s leaves no room in -duration %s for the upgrade (due at the next fault, down for -fault, then a heal)",
				c.UpgradeAt, c.Duration)
		}
	} else if c.Flag(fs, "upgrade-at") {
		return c, fmt.Errorf("-upgrade-at needs -old-bin")
	}
	if c.Peers < 3 || c.Clients < 1 || c.Nodes < 1 {
		return c, fmt.Errorf("need at least 3 peers, 1 client and 1 node")
	}
	if c.Image == "" {
		c.Image = "img"
		if c.RealIronic {
			c.Image = "http://127.0.0.1/jepsen.qcow2"
		}
	}
	if c.Seed == 0 {
		c.Seed = time.Now().UnixNano()
	}
	return c, nil
}

// Flag reports whether the flag was set on the command line.
func (c Config) Flag(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func main() { os.Exit(realMain(os.Args[1:])) }

func realMain(args []string) int {
	cfg, err := parseFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		return 2
	}
	if cfg.Recheck != "" {
		return recheck(cfg)
	}
	dir := filepath.Join(cfg.Results, time.Now().Format("20060102-150405"))
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		return 2
	}
	lf, err := os.Create(filepath.Join(dir, "run.log"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		return 2
	}
	defer lf.Close()
	logger := log.New(io.MultiWriter(os.Stderr, lf), "", log.Ltime|log.Lmicroseconds)
	r := &runner{cfg: cfg, dir: dir, logf: logger.Printf}
	return r.main()
}
