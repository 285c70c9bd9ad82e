package bounds

import (
	"runtime/metrics"
	"testing"
	"time"
)

// Allocated is the bytes the process has allocated so far.
func Allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// Within fails t when what ran since start, over an input of n bytes,
// took longer than 1 s plus perByte per byte or allocated more than 64 MiB
// plus allocPerByte per byte: the bounds that hostile input must not
// break. The fuzzing worker's instrumentation and a shared machine are
// allowed for: linear work stays far below.
func Within(t *testing.T, what string, n int, start time.Time, allocs uint64, perByte time.Duration, allocPerByte uint64) {
	t.Helper()
	if took, limit := time.Since(start), time.Second+time.Duration(n)*perByte; took > limit {
		t.Fatalf("%s of %d bytes took %v, over %v", what, n, took, limit)
	}
	if used, limit := Allocated()-allocs, 64<<20+uint64(n)*allocPerByte; used > limit {
		t.Fatalf("%s of %d bytes allocated %d bytes, over %d", what, n, used, limit)
	}
}
