// Package timebound refuses times a caller cannot have meant, before ops
// and notebook judge expiry and idleness by them.
//
// Go's time.Time.Sub saturates at about 292 years, so a zero time.Time
// (year 1) reads as "expired, or quiet, for ever" and a placeholder such as
// year 9999 as "never": a lease or notebook judged by either is stopped at
// once or kept for good, silently. Check accepts only times from the Unix
// epoch to the last instant time.Time.UnixNano represents (2262).
//
//	if err := timebound.Check("at", at); err != nil {
//		return fmt.Errorf("renew lease %s/%s: %w", ns, name, err)
//	}
package timebound
