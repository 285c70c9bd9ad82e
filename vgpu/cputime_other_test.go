//go:build !unix

package vgpu_test

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
