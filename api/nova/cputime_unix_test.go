//go:build unix

package nova

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has consumed, user and
// system, every thread (the garbage collector's too).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
