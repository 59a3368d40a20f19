// Package check holds the checkers. Each reads the history, and what the
// run recorded beside it, and returns a result of its own; All runs them
// into one Verdict. model.go is the porcupine model of one server, which
// linear.go holds every server's history to; final.go holds the state read
// after the heal to DESIGN.md's invariants 1-3; avail.go measures each
// fault window; faults.go says whether every fault happened as scheduled;
// massboot.go and actions.go (with actions_end.go) check what their
// workloads promise. It starts nothing and reads no network, so -recheck
// runs it again on an old results folder.
package check
