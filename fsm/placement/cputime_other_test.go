//go:build !linux

package placement

import "time"

// threadCPU is not measured on this platform.
func threadCPU() time.Duration { return 0 }
