package check

import (
	"time"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
)

// RunInfo describes the run.
type RunInfo struct {
	Started  string   `json:"started"`
	Duration string   `json:"duration"`
	Nemesis  []string `json:"nemesis"`
	Seed     int64    `json:"seed"`
	Clients  int      `json:"clients"`
	Peers    int      `json:"peers"`
	Ironic   string   `json:"ironic"`
	Nodes    int      `json:"ironic_nodes"`
	Injected []string `json:"injected,omitempty"`
	Corral   string   `json:"corral"`             // git describe of the source built
	Race     bool     `json:"race"`               // the agents were built with the race detector
	Security string   `json:"security,omitempty"` // TLS, gossip encryption
	Auth     string   `json:"auth,omitempty"`     // static tokens or Keystone
	Networks string   `json:"networks,omitempty"` // -neutron: Neutron's URL and the network, or why it was skipped
	Workload string   `json:"workload,omitempty"` // "" (older runs) is mixed
	// Upgrade: with -old-bin, the peer upgraded during the run.
	Upgrade *history.Upgrade `json:"upgrade,omitempty"`
}

// Verdict is verdict.json: every checker's result. Valid only if every
// fault happened as scheduled, the linearizability, final-state and
// availability checkers (and those of the run's workload, Neutron and
// upgrade) are valid and no agent hit a data race; the
// default-read check is informational (default reads are documented as
// possibly stale while a deposed leader does not know it yet).
type Verdict struct {
	Valid        bool                `json:"valid"`
	Run          RunInfo             `json:"run"`
	Faults       FaultResult         `json:"faults"`
	Linearizable LinResult           `json:"linearizable"`
	DefaultReads LinResult           `json:"default_reads_informational"`
	Final        FinalResult         `json:"final_state"`
	Availability AvailResult         `json:"availability"`
	MassBoot     *MassResult         `json:"massboot,omitempty"`   // with -workload massboot
	Actions      *ActionResult       `json:"actions,omitempty"`    // with -workload actions
	Neutron      *NeutronResult      `json:"neutron,omitempty"`    // with -neutron
	Upgrade      *UpgradeResult      `json:"upgrade,omitempty"`    // with -old-bin
	DataRaces    map[string][]string `json:"data_races,omitempty"` // agent → race detector reports
	OpCounts     OpCounts            `json:"op_counts"`
	Windows      []history.Window    `json:"windows"`
}

// OpCounts counts completions by function and type.
type OpCounts map[string]map[string]int

func countOps(pairs []history.Pair) OpCounts {
	c := OpCounts{}
	for _, p := range pairs {
		f := p.Invoke.F
		if c[f] == nil {
			c[f] = map[string]int{}
		}
		t := p.Type()
		if p.Invoke.F == history.FDelete && p.Complete != nil && p.Complete.Value.NotFound {
			t = "fail-404"
		}
		c[f][t]++
	}
	return c
}

// Input is what the checkers read: the history and what the run recorded
// beside it.
type Input struct {
	Ops           []history.Op
	Final         history.FinalState
	Windows       []history.Window
	Waves         []history.Wave      // -workload massboot
	Effects       client.EffectLog    // -workload actions, -neutron with the simulator
	Recovery      time.Duration       // from the last heal to a ready cluster acknowledging a write
	RecoveryError string              // why the cluster did not recover ("": it did)
	HealError     string              // the error of the heal after the workload
	Races         map[string][]string // agent → data race reports
	Run           RunInfo
	VizDir        string        // where linearizability visualizations go ("": none)
	Timeout       time.Duration // linearizability search budget per server
}

// All runs every checker: the linearizability, final-state, availability
// and fault checkers on every run, the mass-boot or actions checker on
// their workload's, the Neutron checker when the final state holds
// Neutron's (-neutron).
func All(in Input) Verdict {
	ix := history.NewIndex(in.Ops)
	run := in.Run
	v := Verdict{Run: run, Windows: in.Windows, OpCounts: countOps(ix.Pairs), DataRaces: in.Races}
	v.Linearizable = Linearizable(ix, false, in.Timeout, in.VizDir)
	v.DefaultReads = Linearizable(ix, true, in.Timeout, "")
	v.Final = Final(ix, in.Final)
	v.Availability = Availability(ix, in.Windows, in.Recovery, in.RecoveryError)
	v.Faults = Faults(ix, in.Windows, in.HealError)
	v.Valid = v.Faults.Valid && v.Linearizable.Valid && v.Final.Valid && v.Availability.Valid && len(in.Races) == 0
	if run.Workload == history.WorkloadMassBoot {
		m := MassBoot(in.Waves, run.Nodes, in.Final)
		v.MassBoot = &m
		v.Valid = v.Valid && m.Valid
	}
	if run.Workload == history.WorkloadActions {
		a := Actions(ix, in.Effects, in.Final, in.Windows)
		v.Actions = &a
		v.Valid = v.Valid && a.Valid
	}
	if in.Final.Neutron != nil {
		n := Neutron(ix, in.Final, in.Effects)
		v.Neutron = &n
		v.Valid = v.Valid && n.Valid
	}
	if run.Upgrade != nil {
		u := Upgrade(run.Upgrade, in.Windows)
		v.Upgrade = &u
		v.Valid = v.Valid && u.Valid
	}
	return v
}

// ExitCode is the suite's exit status for the verdict: 2 when a fault did
// not happen as scheduled (the run tested something else than it says), 1
// when a checker found a violation, 0 when the run is valid.
func (v Verdict) ExitCode() int {
	switch {
	case !v.Faults.Valid:
		return 2
	case !v.Valid:
		return 1
	}
	return 0
}
