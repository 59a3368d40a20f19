package check

import (
	"fmt"

	"github.com/anishathalye/porcupine"
	"github.com/corral-dev/corral/jepsen/history"
)

// The model of one server (one key: the unique name its boot used), as
// corral promises it:
//
//   - a boot that returned 202 created the server (status BUILD, or ERROR
//     when no host could take it);
//   - status only moves BUILD → ACTIVE or BUILD → ERROR;
//   - a delete that returned 204 was applied: from then on the server shows
//     task_state "deleting" until it is gone, and once a read says 404 it
//     stays 404 (no resurrection);
//   - a delete answered 404 happened while the server did not exist (before
//     its boot or after it was gone);
//   - nothing deletes a server but a delete request;
//   - a server action answered 202 (-workload actions) was accepted while
//     the server was live and not being deleted; from then on its status
//     may move between ACTIVE, SHUTOFF, REBOOT, HARD_REBOOT, REBUILD and
//     ERROR, never back to BUILD (what each action does in Ironic is the
//     actions checker's).
//
// Operations whose outcome is unknown (info) may take effect at any point
// after their invocation, or never.

// Phases of a server's life.
const (
	phaseAbsent   uint8 = iota // not created yet
	phaseLive                  // created, no delete applied
	phaseDeleting              // a delete was applied; not gone yet
	phaseGone                  // a read saw it gone
)

var phaseNames = []string{"absent", "live", "deleting", "gone"}

// linState is the model state of one server.
type linState struct {
	Phase  uint8
	Status string // last status seen ("" = not seen yet)
	Acted  bool   // a server action was applied
}

// linInput is an operation on one server.
type linInput struct {
	F     string // boot, delete, read
	Index int    // index of the completion (or invocation) in the history
}

// Output kinds.
const (
	outOK       = "ok"
	outUnknown  = "unknown"
	outNotFound = "notfound"
	outPresent  = "present"
)

// linOutput is what the operation returned.
type linOutput struct {
	Kind     string
	Status   string
	Deleting bool
}

func statusNext(from, to string, acted bool) bool {
	if from == "" || from == to {
		return true
	}
	if acted {
		return to != "BUILD"
	}
	return from == "BUILD" && (to == "ACTIVE" || to == "ERROR")
}

func linStep(s linState, in linInput, out linOutput) (bool, linState) {
	switch in.F {
	case history.FBoot:
		if s.Phase != phaseAbsent {
			return false, s
		}
		return true, linState{Phase: phaseLive}
	case history.FDelete:
		switch out.Kind {
		case outOK:
			if s.Phase == phaseLive || s.Phase == phaseDeleting {
				s.Phase = phaseDeleting
				return true, s
			}
			return false, s
		case outNotFound:
			switch s.Phase {
			case phaseLive:
				return false, s
			case phaseDeleting:
				s.Phase = phaseGone
			}
			return true, s
		default: // unknown: applied if there was something to delete
			if s.Phase == phaseLive {
				s.Phase = phaseDeleting
			}
			return true, s
		}
	case history.FAction:
		if out.Kind == outOK && s.Phase != phaseLive {
			return false, s // accepted while absent, deleting or gone
		}
		if s.Phase == phaseLive {
			s.Acted = true // an unknown outcome may have been applied
		}
		return true, s
	case history.FRead:
		if out.Kind == outNotFound {
			switch s.Phase {
			case phaseLive:
				return false, s
			case phaseDeleting:
				s.Phase = phaseGone
			}
			return true, s
		}
		switch s.Phase {
		case phaseLive:
			if out.Deleting {
				return false, s // a delete nobody asked for
			}
		case phaseDeleting:
			if !out.Deleting {
				return false, s // an acknowledged delete undone
			}
		default:
			return false, s // not created yet, or resurrected
		}
		if !statusNext(s.Status, out.Status, s.Acted) {
			return false, s
		}
		s.Status = out.Status
		return true, s
	}
	return false, s
}

// serverModel is the porcupine model of one server.
var serverModel = porcupine.Model{
	Init: func() interface{} { return linState{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		return linStep(state.(linState), input.(linInput), output.(linOutput))
	},
	Equal: func(a, b interface{}) bool { return a.(linState) == b.(linState) },
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(linInput), output.(linOutput)
		switch out.Kind {
		case outPresent:
			d := ""
			if out.Deleting {
				d = " (deleting)"
			}
			return fmt.Sprintf("#%d %s → %s%s", in.Index, in.F, out.Status, d)
		}
		return fmt.Sprintf("#%d %s → %s", in.Index, in.F, out.Kind)
	},
	DescribeState: func(state interface{}) string {
		s := state.(linState)
		d := phaseNames[s.Phase]
		if s.Status != "" {
			d += " " + s.Status
		}
		if s.Acted {
			d += " (acted on)"
		}
		return d
	},
}
