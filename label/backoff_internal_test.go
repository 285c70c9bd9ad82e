package label

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The wait between retries doubles up to maxBackoff and never wraps:
// unbounded, 200ms doubled 36 times went negative and the retries came at
// once.
func TestNextBackoffStopsDoubling(t *testing.T) {
	d := 200 * time.Millisecond
	var waits []time.Duration
	for range 100 {
		waits = append(waits, d)
		d = nextBackoff(d)
		assert.Positive(t, d)
		assert.LessOrEqual(t, d, maxBackoff)
	}
	assert.Equal(t, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}, waits[:3])
	assert.Equal(t, maxBackoff, waits[99])
	assert.Equal(t, 5*time.Minute, nextBackoff(5*time.Minute), "a longer wait as given stays")
	assert.Equal(t, time.Duration(0), nextBackoff(0), "no wait asked for, none taken")
}
