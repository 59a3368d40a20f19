package check

import (
	"strings"
	"testing"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
	"github.com/corral-dev/corral/jepsen/history/historytest"
)

func neutronCheck(r *historytest.NeutronRun) NeutronResult {
	return Neutron(history.NewIndex(r.H.Ops), r.FS, r.Log)
}

// wantNeutronAnomaly fails unless the verdict is invalid with an anomaly
// of kind whose detail holds every part.
func wantNeutronAnomaly(t *testing.T, res NeutronResult, kind string, parts ...string) {
	t.Helper()
	if res.Valid {
		t.Fatalf("verdict valid, want %s: %s", kind, res.Summary())
	}
	for _, an := range res.Anomalies {
		if an.Kind != kind {
			continue
		}
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(an.Detail, p)
		}
		if ok {
			return
		}
	}
	t.Fatalf("no %s anomaly naming %q: %+v", kind, parts, res.Anomalies)
}

func TestNeutronCleanRunIsValid(t *testing.T) {
	r := historytest.NewNeutronRun()
	res := neutronCheck(r)
	if !res.Valid {
		t.Fatalf("clean run invalid: %+v", res.Anomalies)
	}
	if res.Ports != 4 || res.CorralPorts != 1 || res.Marked != 1 || res.UserPorts != 3 || res.UserPortBoots != 2 ||
		res.Checked != 2 || res.Orphans != 0 || !res.VIFsChecked {
		t.Fatalf("counts: %s", res.Summary())
	}
	// The whole verdict holds it too, and says it in the summary.
	v := All(Input{Ops: r.H.Ops, Final: r.FS, Effects: r.Log, Timeout: 5e9})
	if !v.Valid || v.Neutron == nil || !v.Neutron.Valid {
		t.Fatalf("verdict: valid %v, final %+v, neutron %+v", v.Valid, v.Final.Anomalies, v.Neutron)
	}
	// Without -neutron there is no Neutron verdict.
	fs := r.FS
	fs.Neutron = nil
	if v := All(Input{Ops: r.H.Ops, Final: fs, Timeout: 5e9}); v.Neutron != nil {
		t.Fatalf("a run without Neutron got a Neutron verdict: %+v", v.Neutron)
	}
}

// (a) A port whose server is deleted, or unknown to corral, is an orphan
// once the reaper had its grace; the detail says whether corral marked it
// and how long the suite waited.
func TestNeutronOrphanPorts(t *testing.T) {
	r := historytest.NewNeutronRun()
	r.FS.Neutron.Ports = append(r.FS.Neutron.Ports, historytest.Port(historytest.PortA, historytest.IDA, "", "192.0.2.10", "fa:16:3e:00:00:0a", ""))
	r.FS.Neutron.Reap = history.ReapWait{GraceS: 10, WaitS: 30, WaitedS: 30.2, OrphansBefore: 1}
	res := neutronCheck(r)
	wantNeutronAnomaly(t, res, "neutron-orphan-port", historytest.PortA, "DELETED", `description ""`, "after 30s of the 30s", "corral has no option")
	if res.Orphans != 1 {
		t.Fatalf("orphans %d, want 1", res.Orphans)
	}

	// A server the history names but corral never listed (a boot whose
	// answer was lost, seen once by a list, gone since).
	r = historytest.NewNeutronRun()
	ghost := "ffffffff-0000-4000-8000-00000000000f"
	r.H.List(3, history.ServerState{ID: ghost, Name: "g", Status: "BUILD"})
	r.FS.Neutron.KnownServers = append(r.FS.Neutron.KnownServers, ghost)
	r.FS.Neutron.Ports = append(r.FS.Neutron.Ports, historytest.Port("0f0f0f0f-0000-4000-8000-0000000000f1", ghost, "", "192.0.2.20", "", "corral"))
	wantNeutronAnomaly(t, neutronCheck(r), "neutron-orphan-port", ghost, "unknown to corral", "marked as corral's")
}

// A port of the user's project made during the run whose device is no
// server of the run is only counted, unless it is bound to a node of the
// run: then it is the run's, for a device corral does not know.
func TestNeutronUnattributedPorts(t *testing.T) {
	r := historytest.NewNeutronRun()
	r.FS.Neutron.Ports = append(r.FS.Neutron.Ports, historytest.Port("12121212-0000-4000-8000-000000000012", "someone-elses-vm", "", "192.0.2.30", "", ""))
	res := neutronCheck(r)
	if !res.Valid || res.Unattributed != 1 || len(res.Notes) == 0 {
		t.Fatalf("an unattributed port must be a note: %+v", res)
	}
	r.PortOf("12121212-0000-4000-8000-000000000012").HostID = historytest.NodeY
	wantNeutronAnomaly(t, neutronCheck(r), "neutron-foreign-device", "someone-elses-vm", historytest.NodeY)
}

// (b) An ACTIVE server without its port, with two, with one the boot did
// not ask for, bound elsewhere, or whose addresses corral shows otherwise.
func TestNeutronServerPorts(t *testing.T) {
	r := historytest.NewNeutronRun()
	r.DropPort(historytest.PortB)
	wantNeutronAnomaly(t, neutronCheck(r), "neutron-missing-port", "0 ports on network provider")

	r = historytest.NewNeutronRun()
	r.FS.Neutron.Ports = append(r.FS.Neutron.Ports, historytest.Port("b2b2b2b2-0000-4000-8000-0000000000b2", historytest.IDB, "", "192.0.2.21", "fa:16:3e:00:00:21", "corral"))
	res := neutronCheck(r)
	wantNeutronAnomaly(t, res, "neutron-double-port", "2 ports on network provider", historytest.PortB, "b2b2b2b2")
	wantNeutronAnomaly(t, res, "neutron-address-mismatch", "192.0.2.21")

	r = historytest.NewNeutronRun()
	other := historytest.Port("b3b3b3b3-0000-4000-8000-0000000000b3", historytest.IDB, historytest.NodeX, "198.51.100.3", "fa:16:3e:00:00:b3", "corral")
	other.NetworkID = "another-network"
	r.FS.Neutron.Ports = append(r.FS.Neutron.Ports, other)
	wantNeutronAnomaly(t, neutronCheck(r), "neutron-unrequested-port", "b3b3b3b3", "another-network")

	r = historytest.NewNeutronRun()
	r.PortOf(historytest.PortB).HostID = ""
	wantNeutronAnomaly(t, neutronCheck(r), "neutron-binding-mismatch", historytest.PortB, `host ""`)

	r = historytest.NewNeutronRun()
	r.FS.Neutron.Addresses[historytest.IDB] = []history.Address{{Network: historytest.NetName, IP: "192.0.2.99", MAC: "fa:16:3e:00:00:0b"}}
	wantNeutronAnomaly(t, neutronCheck(r), "neutron-address-mismatch", "192.0.2.99", "192.0.2.11")

	r = historytest.NewNeutronRun()
	delete(r.FS.Neutron.Addresses, historytest.IDC)
	wantNeutronAnomaly(t, neutronCheck(r), "neutron-address-mismatch", "did not list the server")

	// The user's port handed to C is some other device's.
	r = historytest.NewNeutronRun()
	r.PortOf(historytest.UserC).DeviceID = historytest.IDB
	res = neutronCheck(r)
	wantNeutronAnomaly(t, res, "neutron-user-port-not-bound", historytest.UserC)
	wantNeutronAnomaly(t, res, "neutron-unrequested-port", historytest.UserC)
}

// (c) No two live servers show one address, and a user's port never goes
// to two live servers, nor a VIF to two nodes.
func TestNeutronSharedPorts(t *testing.T) {
	r := historytest.NewNeutronRun()
	r.FS.Neutron.Addresses[historytest.IDC] = append(r.FS.Neutron.Addresses[historytest.IDC], r.FS.Neutron.Addresses[historytest.IDB]...)
	res := neutronCheck(r)
	wantNeutronAnomaly(t, res, "neutron-shared-port", "192.0.2.11", historytest.IDB, historytest.IDC)

	r = historytest.NewNeutronRun()
	r.H.BootNets(10, "b2", "b2b2b2b2-0000-4000-8000-000000000b22", historytest.ByPort(historytest.UserC))
	r.FS.Servers = append(r.FS.Servers, history.ServerState{ID: "b2b2b2b2-0000-4000-8000-000000000b22", Name: "b2", Status: "ERROR"})
	wantNeutronAnomaly(t, neutronCheck(r), "neutron-shared-port", "the user's port "+historytest.UserC+" was given to live servers")

	r = historytest.NewNeutronRun()
	r.VIF(historytest.NodeX, "attach", historytest.UserC)
	wantNeutronAnomaly(t, neutronCheck(r), "neutron-shared-port", historytest.UserC, "attached to nodes")
}

// (d) The user's ports are given back unbound and never deleted.
func TestNeutronUserPorts(t *testing.T) {
	r := historytest.NewNeutronRun()
	p := r.PortOf(historytest.UserD)
	p.DeviceID, p.DeviceOwner, p.HostID = historytest.IDD, "compute:nova", historytest.NodeX
	res := neutronCheck(r)
	wantNeutronAnomaly(t, res, "neutron-user-port-not-released", historytest.UserD, historytest.IDD+", DELETED", historytest.NodeX)
	if res.Orphans != 0 {
		t.Fatalf("a user's port counted as an orphan: %s", res.Summary())
	}

	r = historytest.NewNeutronRun()
	r.PortOf(historytest.UserX).HostID = historytest.NodeY
	wantNeutronAnomaly(t, neutronCheck(r), "neutron-user-port-not-released", historytest.UserX, "no server that exists")

	r = historytest.NewNeutronRun()
	r.DropPort(historytest.UserD)
	wantNeutronAnomaly(t, neutronCheck(r), "neutron-user-port-deleted", historytest.UserD, "never deleted")

	// An ERROR server may keep the user's port or have given it back.
	r = historytest.NewNeutronRun()
	for i := range r.FS.Servers {
		if r.FS.Servers[i].ID == historytest.IDC {
			r.FS.Servers[i].Status = "ERROR"
		}
	}
	if res := neutronCheck(r); !res.Valid {
		t.Fatalf("ERROR server keeping the user's port: %+v", res.Anomalies)
	}
	p = r.PortOf(historytest.UserC)
	p.DeviceID, p.DeviceOwner, p.HostID = "", "", ""
	if res := neutronCheck(r); !res.Valid {
		t.Fatalf("ERROR server that gave the user's port back: %+v", res.Anomalies)
	}
}

// VIFs from the simulator's log: each ACTIVE server's port is attached to
// its node; without a log, or with one cut short, the VIFs are a note.
func TestNeutronVIFs(t *testing.T) {
	r := historytest.NewNeutronRun()
	r.VIF(historytest.NodeX, "detach", historytest.PortB)
	wantNeutronAnomaly(t, neutronCheck(r), "neutron-vif-missing", historytest.PortB, historytest.NodeX)

	for _, log := range []client.EffectLog{{Error: "read the simulator's side-effect log: EOF"}, {SideEffects: []client.SideEffect{}, Dropped: 3}, {}} {
		r = historytest.NewNeutronRun()
		r.Log = log
		res := neutronCheck(r)
		if !res.Valid || res.VIFsChecked || len(res.Notes) == 0 || !strings.Contains(res.Notes[0], "VIFs not checked") {
			t.Fatalf("log %+v: %+v", log, res)
		}
	}

	// A VIF left on a node for a port that is gone is a note (the
	// simulator does not detach at undeploy).
	r = historytest.NewNeutronRun()
	r.VIF(historytest.NodeY, "attach", historytest.PortA)
	if res := neutronCheck(r); !res.Valid || !strings.Contains(strings.Join(res.Notes, "\n"), "1 VIFs stay attached") {
		t.Fatalf("stale VIF: %+v", res)
	}
}

// What Neutron could not tell fails the check, as does a missing state.
func TestNeutronUnreadable(t *testing.T) {
	r := historytest.NewNeutronRun()
	r.FS.Neutron.Errors = []string{"Neutron ports: GET /v2.0/ports: HTTP 503"}
	wantNeutronAnomaly(t, neutronCheck(r), "unreadable", "HTTP 503")
	r.FS.Neutron = nil
	wantNeutronAnomaly(t, neutronCheck(r), "unreadable", "no Neutron state")
}
