package cputime

import "time"

// Process is the user and system CPU time the process has used, all
// threads together (the garbage collector's too); ok is false where the
// platform does not say.
func Process() (d time.Duration, ok bool) { return process() }

// Meter measures the CPU time from its start.
type Meter struct {
	start time.Duration
	ok    bool
}

// Start starts a Meter.
func Start() Meter {
	d, ok := Process()
	return Meter{start: d, ok: ok}
}

// Elapsed is the CPU time since Start; ok is false where the platform
// does not say.
func (m Meter) Elapsed() (time.Duration, bool) {
	d, ok := Process()
	return d - m.start, ok && m.ok
}
