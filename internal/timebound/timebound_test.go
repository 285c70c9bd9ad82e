package timebound_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cubestudio/cube/internal/timebound"
)

func TestCheck(t *testing.T) {
	assert.NoError(t, timebound.Check("at", time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)))
	assert.NoError(t, timebound.Check("at", timebound.Earliest))
	assert.NoError(t, timebound.Check("at", timebound.Latest))
	assert.EqualError(t, timebound.Check("at", time.Time{}), "at: must be set (it is the zero time)")
	assert.EqualError(t, timebound.Check("at", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)),
		"at: 9999-01-01T00:00:00Z is outside 1970-01-01T00:00:00Z to 2262-04-11T23:47:16Z")
	assert.EqualError(t, timebound.Check("at", timebound.Earliest.Add(-time.Second)),
		"at: 1969-12-31T23:59:59Z is outside 1970-01-01T00:00:00Z to 2262-04-11T23:47:16Z")
	assert.Error(t, timebound.Check("at", timebound.Latest.Add(time.Nanosecond)))
}
