package fsm

import "slices"

// leaderDecided is implemented by commands in which the leader records a
// decision taken from the current state (the owner and claim of a new
// server, a reassignment plan, the owner of an adopted server) before
// proposing, so that Apply only validates it.
type leaderDecided interface {
	Command
	// decided returns a copy of the command with the decisions taken on
	// st (any it carried are forgotten: a deposed leader's included),
	// avoiding avoid when it is not empty, and reports for each server
	// decided whether no resource provider at all could take it.
	decided(st *state, avoid []string) (Command, []bool)
}

// A Decision is what the leader decided for one command.
type Decision struct {
	// Command is what to commit: a copy of the command scheduled, with
	// the leader's decisions recorded in it.
	Command Command
	// NoCandidate tells, for each server decided (those of a
	// CreateServers, in order; otherwise the one command), that no
	// resource provider at all could take it: Ironic may hold nodes the
	// mirror does not have yet.
	NoCandidate []bool
}

// Decides reports whether c carries a decision of the leader (Schedule
// takes it); any other command is committed as it is.
func Decides(c Command) bool {
	_, ok := c.(leaderDecided)
	return ok
}

// Schedule takes the leader's decisions for c on the current state, under
// the state's read lock, and changes neither the state nor c. avoid, when
// not empty, are hosts the state still shows up that the decisions must
// not choose (gossip already sees them gone); it is recorded in the
// command, so that every replica applies the same decision. The servers
// of a CreateServers are decided together, in order, each counting the
// claims and hosts of those before it, so that one batch never gives a
// node twice. It returns false for a command that carries no decision.
//
// Scheduling is all fsm does for the leader: which commands to decide
// together, when to refresh the node mirror and when to decide again
// after ErrStaleDecision are the leader's (cluster).
func (s *Store) Schedule(c Command, avoid []string) (Decision, bool) {
	p, ok := c.(leaderDecided)
	if !ok {
		return Decision{}, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	cmd, starved := p.decided(s.st, avoid)
	return Decision{Command: cmd, NoCandidate: starved}, true
}

// avoiding returns avoid when it is not empty, else own: the hosts a
// decision avoids.
func avoiding(own, avoid []string) []string {
	if len(avoid) > 0 {
		return slices.Clone(avoid)
	}
	return own
}
