package notebook

import (
	"fmt"
	"math"
	"time"
)

// The times Cull and Renew judge by (the clock, renewals, the servers'
// last activity) must lie in [earliestTime, latestTime]: from the Unix
// epoch to the last instant time.Time.UnixNano represents (2262). Go's
// Time.Sub saturates at about 292 years, so without the bound a zero
// time.Time (year 1) reads as "quiet or running for ever", which culls at
// once, and a placeholder such as year 9999 as "never".
var (
	earliestTime = time.Unix(0, 0).UTC()
	latestTime   = time.Unix(0, math.MaxInt64).UTC()
)

// checkTime refuses a time outside [earliestTime, latestTime], naming it.
func checkTime(name string, t time.Time) error {
	switch {
	case t.IsZero():
		return fmt.Errorf("%s: must be set (it is the zero time)", name)
	case t.Before(earliestTime) || t.After(latestTime):
		return fmt.Errorf("%s: %s is outside %s to %s", name, t.UTC().Format(time.RFC3339), earliestTime.Format(time.RFC3339), latestTime.Format(time.RFC3339))
	}
	return nil
}
