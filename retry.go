package cube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// ErrUnavailable is wrapped by the error of a call that gave up because the
// API server kept failing for a passing reason (see the Retry option). The error also
// wraps the last failure, so apierrors predicates still see it.
var ErrUnavailable = errors.New("API server unavailable")

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
	// A broken pipe is a request written to a connection the server closed
	// (it stopped or restarted meanwhile): the next one dials afresh. So
	// is a request whose HTTP/2 connection the transport closed under it
	// once the server went away (net/http's bundled http2,
	// ClientConn.Close: "http2: client connection force closed via
	// ClientConn.Close"; apimachinery's IsHTTP2ConnectionLost matches
	// only the health check's "client connection lost").
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) ||
		errors.Is(err, syscall.EPIPE) ||
		utilnet.IsProbableEOF(err) || utilnet.IsHTTP2ConnectionLost(err) ||
		strings.Contains(err.Error(), "http2: client connection force closed")
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
// retry.Policy is spent (the error then wraps ErrUnavailable), or ctx ends.
func (c *Client) retrying(ctx context.Context, do func(context.Context) error) error {
	began := time.Now()
	for attempt := 1; ; attempt++ {
		err := do(ctx)
		if err == nil || !transient(err) {
			return err
		}
		if attempt > c.retry.Limit || c.retry.MaxDuration > 0 && time.Since(began)+c.retry.Delay(attempt) > c.retry.MaxDuration {
			return fmt.Errorf("%w after %d attempts in %s: %w", ErrUnavailable, attempt, time.Since(began).Round(time.Millisecond), err)
		}
		t := time.NewTimer(c.retry.Delay(attempt))
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
