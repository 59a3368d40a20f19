// Package nemesis injects the faults: kill, pause, partition, leader,
// wipe, restart, combo and keyrotate (families.go), one at a time on a
// schedule of heal, fault, heal, ... in which every family gets its turn
// (nemesis.go). Each fault is recorded as a window, with what kept it from
// being injected or undone; partition.go cuts links, keyrotate.go rotates
// the gossip key. A workload may aim a fault at the agent of its choice
// (Nemesis.Aim).
package nemesis
