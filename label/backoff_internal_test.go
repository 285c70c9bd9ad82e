package label

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The wait between retries doubles up to a minute and never wraps:
// unbounded, 200ms doubled 36 times went negative and the retries came at
// once. The client's loop is retry.Do, which waits DefaultRetry().Delay.
func TestDefaultRetryStopsDoubling(t *testing.T) {
	p := DefaultRetry()
	var waits []time.Duration
	for n := 1; n <= 100; n++ {
		d := p.Delay(n)
		waits = append(waits, d)
		assert.Positive(t, d)
		assert.LessOrEqual(t, d, time.Minute)
	}
	assert.Equal(t, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}, waits[:3])
	assert.Equal(t, time.Minute, waits[99])
	assert.NoError(t, p.Err())
}
