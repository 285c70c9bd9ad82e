//go:build unix

package vgpu_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the test process has used; on a shared machine
// it measures the planner's work where wall time measures the neighbours.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
