package timebound

import (
	"fmt"
	"math"
	"time"
)

// Earliest and Latest bound the times Check accepts: the Unix epoch and the
// last instant time.Time.UnixNano represents.
var (
	Earliest = time.Unix(0, 0).UTC()
	Latest   = time.Unix(0, math.MaxInt64).UTC()
)

// Check refuses a time that is the zero time or outside [Earliest, Latest],
// with an error that names it.
func Check(name string, t time.Time) error {
	switch {
	case t.IsZero():
		return fmt.Errorf("%s: must be set (it is the zero time)", name)
	case t.Before(Earliest) || t.After(Latest):
		return fmt.Errorf("%s: %s is outside %s to %s", name, t.UTC().Format(time.RFC3339), Earliest.Format(time.RFC3339), Latest.Format(time.RFC3339))
	}
	return nil
}
