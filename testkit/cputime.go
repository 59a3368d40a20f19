//go:build unix

package testkit

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time this process has consumed, user and
// system, every thread (the garbage collector's too): the difference
// around a piece of work is its CPU cost, whatever else the machine runs.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
