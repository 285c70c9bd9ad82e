package cube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// ErrUnavailable is wrapped by the error of a call that gave up because the
// API server kept failing for a passing reason (see Retry). The error also
// wraps the last failure, so apierrors predicates still see it.
var ErrUnavailable = errors.New("API server unavailable")

// Retry is how a Client retries a request the API server could not serve
// for a passing reason: a refused, reset or dropped connection, a 5xx
// answer (a 500 only when it says the server's storage failed or timed
// out), or a 429 without Retry-After. Up to Limit more attempts, waiting
// Backoff, multiplied by Factor after each retry and capped at MaxBackoff.
//
// client-go already retries, up to ten times and waiting as the server
// asks, every answer that carries Retry-After (429 from priority and
// fairness, 5xx with the header), and a GET whose connection was reset;
// a Client does not retry those again. Every write a Client retries is
// idempotent: server-side apply, a delete (an object already gone counts
// as deleted), the creation of a release record (one that exists is read
// instead).
type Retry struct {
	Limit      int
	Backoff    time.Duration
	Factor     int // default 1
	MaxBackoff time.Duration
}

// DefaultRetry is the Retry of a Client unless WithRetry says otherwise:
// six retries over about twelve seconds, long enough for an API server
// behind a balancer to restart.
var DefaultRetry = Retry{Limit: 6, Backoff: 250 * time.Millisecond, Factor: 2, MaxBackoff: 4 * time.Second}

// WithRetry sets how the client retries requests that failed for a passing
// reason; Retry{} retries nothing. A negative field makes every method of
// the client fail (New fails at once).
func WithRetry(r Retry) Option {
	return func(c *Client) {
		var errs []error
		if r.Limit < 0 {
			errs = append(errs, fmt.Errorf("cube: retry limit %d is negative", r.Limit))
		}
		if r.Backoff < 0 {
			errs = append(errs, fmt.Errorf("cube: retry backoff %s is negative", r.Backoff))
		}
		if r.Factor < 0 {
			errs = append(errs, fmt.Errorf("cube: retry factor %d is negative", r.Factor))
		}
		if r.MaxBackoff < 0 {
			errs = append(errs, fmt.Errorf("cube: retry max backoff %s is negative", r.MaxBackoff))
		}
		if len(errs) > 0 {
			c.err = errors.Join(append([]error{c.err}, errs...)...)
			return
		}
		c.retry = r
	}
}

// delay returns the wait before retry n (1-based).
func (r Retry) delay(n int) time.Duration {
	d := r.Backoff
	factor := time.Duration(max(r.Factor, 1))
	for i := 1; i < n; i++ {
		if r.MaxBackoff > 0 && d >= r.MaxBackoff {
			break
		}
		d *= factor
	}
	if r.MaxBackoff > 0 && d > r.MaxBackoff {
		return r.MaxBackoff
	}
	return d
}

// transient reports whether err is a failure that may pass: the server
// was unreachable, overloaded or failing, and client-go has not already
// retried it as the server asked.
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if seconds, ok := apierrors.SuggestsClientDelay(err); ok && seconds > 0 {
		// The answer carried Retry-After: client-go waited and retried it
		// (rest.Request's maxRetries, ten by default) before giving up.
		// (SuggestsClientDelay also says yes, with 0, to every timeout.)
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		switch {
		case s.Code == http.StatusTooManyRequests:
			return true
		case s.Code == http.StatusInternalServerError:
			return serverTrouble(s.Reason)
		}
		return s.Code > http.StatusInternalServerError
	}
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) ||
		utilnet.IsProbableEOF(err) || utilnet.IsHTTP2ConnectionLost(err)
}

// serverTrouble reports whether a 500 with reason is the server's own
// trouble (its storage failed or timed out), which may pass. Other 500s
// are requests it cannot serve: server-side apply answers an object its
// schema does not know ("failed to create typed patch object … field not
// declared in schema") with a 500 and no reason.
func serverTrouble(reason metav1.StatusReason) bool {
	return reason == metav1.StatusReasonInternalError || reason == metav1.StatusReasonServerTimeout
}

// retrying calls do until it succeeds, fails for good, or the client's
// Retry is spent (the error then wraps ErrUnavailable), or ctx ends.
func (c *Client) retrying(ctx context.Context, do func(context.Context) error) error {
	began := time.Now()
	for attempt := 1; ; attempt++ {
		err := do(ctx)
		if err == nil || !transient(err) {
			return err
		}
		if attempt > c.retry.Limit {
			return fmt.Errorf("%w after %d attempts in %s: %w", ErrUnavailable, attempt, time.Since(began).Round(time.Millisecond), err)
		}
		t := time.NewTimer(c.retry.delay(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w while retrying: %w", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// joinErrors is errors.Join on one line: nil when every err is nil, the
// one error when there is one, else their messages separated by "; ",
// with errors.Is and errors.As seeing each. One line keeps a failure one
// log record.
func joinErrors(errs ...error) error {
	var kept lineErrors
	for _, err := range errs {
		if err != nil {
			kept = append(kept, err)
		}
	}
	switch len(kept) {
	case 0:
		return nil
	case 1:
		return kept[0]
	}
	return kept
}

type lineErrors []error

func (e lineErrors) Error() string {
	parts := make([]string, len(e))
	for i, err := range e {
		parts[i] = strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	return strings.Join(parts, "; ")
}

func (e lineErrors) Unwrap() []error { return e }
