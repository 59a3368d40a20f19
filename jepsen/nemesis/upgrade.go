package nemesis

import (
	"fmt"
	"time"

	"github.com/corral-dev/corral/jepsen/cluster"
)

// Upgrade is the upgrade of one agent from an older release to the run's
// binary, as docs/operations.md's rolling upgrade does it: stop the peer,
// install the new binary, start it on the same data dir. Its window is
// the time the agent is down (-fault).
type Upgrade struct {
	Agent *cluster.Agent
	At    time.Duration // due from this time since the start of the run
	Bin   string        // the run's binary, installed over the agent's
	done  bool
}

// due reports whether the upgrade is to be carried out now, once.
func (u *Upgrade) due(since time.Duration) bool {
	if u == nil || u.done || since < u.At {
		return false
	}
	u.done = true
	return true
}

// Done reports whether the upgrade was carried out (or tried).
func (u *Upgrade) Done() bool { return u != nil && u.done }

// upgrade stops the agent (SIGTERM, as systemctl stop), installs the new
// binary over its own, and starts it again at the heal.
func (n *Nemesis) upgrade() (string, string, func() error, error) {
	u := n.Upgrade
	a := u.Agent
	detail := fmt.Sprintf("%s stopped, %s installed over its binary, started again at the heal", a.Name, u.Bin)
	if a.Running() {
		if err := a.Terminate(20 * time.Second); err != nil {
			return "upgrade", detail, func() error { return a.Start() }, fmt.Errorf("stop %s: %w", a.Name, err)
		}
	}
	if err := cluster.Install(u.Bin, a.Binary()); err != nil {
		return "upgrade", detail, func() error { return a.Start() }, fmt.Errorf("install: %w", err)
	}
	return "upgrade", detail, func() error { return a.Start() }, nil
}
