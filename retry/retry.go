package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// Policy is a retry strategy: up to Limit more attempts after the first,
// waiting Backoff before the first retry, the wait multiplied by Factor
// after each retry and capped at MaxBackoff; no retry starts once
// MaxDuration has passed since the first attempt. The zero Policy tries
// once and never again.
type Policy struct {
	// Limit is how many more attempts follow a failed one.
	Limit int
	// Backoff is the wait before the first retry.
	Backoff time.Duration
	// Factor multiplies the wait after each retry; 0 means 1 (a constant
	// wait).
	Factor int
	// MaxBackoff caps the wait; 0 means no cap.
	MaxBackoff time.Duration
	// MaxDuration ends the retries once this long has passed since the
	// first attempt; 0 means no end but Limit.
	MaxDuration time.Duration
}

// Problem is one field of a Policy that cannot be carried out, for callers
// to report under their own field path (spec.retry.limit…).
type Problem struct {
	// Field is the field's name as a path element: limit, backoff,
	// factor, maxBackoff or maxDuration.
	Field string
	// Value is the field's value as text.
	Value string
	// Detail says what is wrong.
	Detail string
}

// Problems returns every field of p that cannot be carried out: negative
// numbers and durations, and a MaxBackoff below Backoff.
func (p Policy) Problems() []Problem {
	var out []Problem
	if p.Limit < 0 {
		out = append(out, Problem{"limit", fmt.Sprint(p.Limit), "must not be negative"})
	}
	if p.Backoff < 0 {
		out = append(out, Problem{"backoff", p.Backoff.String(), "must not be negative"})
	}
	if p.Factor < 0 {
		out = append(out, Problem{"factor", fmt.Sprint(p.Factor), "must not be negative"})
	}
	if p.MaxBackoff < 0 {
		out = append(out, Problem{"maxBackoff", p.MaxBackoff.String(), "must not be negative"})
	} else if p.MaxBackoff > 0 && p.MaxBackoff < p.Backoff {
		out = append(out, Problem{"maxBackoff", p.MaxBackoff.String(), fmt.Sprintf("must not be below backoff (%s)", p.Backoff)})
	}
	if p.MaxDuration < 0 {
		out = append(out, Problem{"maxDuration", p.MaxDuration.String(), "must not be negative"})
	}
	return out
}

// Err returns the problems of p as one error naming each field, or nil.
func (p Policy) Err() error {
	var errs []error
	for _, pr := range p.Problems() {
		errs = append(errs, fmt.Errorf("retry.%s: invalid value %s: %s", pr.Field, pr.Value, pr.Detail))
	}
	return errors.Join(errs...)
}

// Delay returns the wait before retry n (1 is the first retry). It never
// overflows: a wait that would pass MaxBackoff, or the largest duration, is
// capped there.
func (p Policy) Delay(n int) time.Duration {
	if n < 1 || p.Backoff <= 0 {
		return 0
	}
	limit := time.Duration(math.MaxInt64)
	if p.MaxBackoff > 0 {
		limit = p.MaxBackoff
	}
	factor := time.Duration(max(p.Factor, 1))
	d := min(p.Backoff, limit)
	for i := 1; i < n && d < limit; i++ {
		if d > limit/factor {
			return limit
		}
		d *= factor
	}
	return min(d, limit)
}

// Do calls op until it succeeds, returns an error that retryable does not
// accept (a nil retryable accepts every error), or p allows no more
// attempts; it waits Delay between attempts and stops early, with the
// context's error joined to the last one, when ctx ends. It returns op's last
// error. A Policy with problems is not carried out: Do returns Err.
func Do(ctx context.Context, p Policy, retryable func(error) bool, op func(context.Context) error) error {
	if err := p.Err(); err != nil {
		return err
	}
	start := time.Now()
	for attempt := 0; ; attempt++ {
		err := op(ctx)
		if err == nil {
			return nil
		}
		if attempt >= p.Limit || (retryable != nil && !retryable(err)) {
			return err
		}
		wait := p.Delay(attempt + 1)
		if p.MaxDuration > 0 && time.Since(start)+wait > p.MaxDuration {
			return err
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return errors.Join(err, ctx.Err())
		case <-timer.C:
		}
	}
}
