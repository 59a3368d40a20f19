//go:build !unix

package testkit

import "time"

// ProcessCPU is 0 where getrusage is missing.
func ProcessCPU() time.Duration { return 0 }
