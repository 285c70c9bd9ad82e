package cube

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// QuotaExceededError is the API server refusing to create an object
// because it would take a namespace over a ResourceQuota. Its fields hold
// what the server said, e.g. Requested "requests.nvidia.com/gpu=16".
type QuotaExceededError struct {
	Quota     string
	Requested string
	Used      string
	Limited   string
	Err       error
}

func (e *QuotaExceededError) Error() string {
	if e == nil {
		return "<nil QuotaExceededError>"
	}
	return fmt.Sprintf("exceeded quota %s: requested %s, used %s, limited to %s", e.Quota, e.Requested, e.Used, e.Limited)
}

// Unwrap returns the API server's error.
func (e *QuotaExceededError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// AsQuotaExceeded reports whether err (from Apply or any client call) is
// the API server refusing a request over a ResourceQuota, and what the
// server said about it.
func AsQuotaExceeded(err error) (*QuotaExceededError, bool) {
	var qe *QuotaExceededError
	if errors.As(err, &qe) {
		return qe, true
	}
	var status apierrors.APIStatus
	if !apierrors.IsForbidden(err) || !errors.As(err, &status) {
		return nil, false
	}
	qe, ok := parseQuotaExceeded(status.Status().Message)
	if !ok {
		return nil, false
	}
	qe.Err = err
	return qe, true
}

// parseQuotaExceeded reads what the quota admission plugin says when it
// refuses a request, wherever it is quoted (an API error, a controller's
// event): "exceeded quota: NAME, requested: R, used: U, limited: L", each
// list "resource=quantity" joined by commas
// (k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go).
func parseQuotaExceeded(msg string) (*QuotaExceededError, bool) {
	_, rest, ok := strings.Cut(msg, "exceeded quota: ")
	if !ok {
		return nil, false
	}
	qe := &QuotaExceededError{}
	qe.Quota, rest, _ = strings.Cut(rest, ", requested: ")
	qe.Requested, rest, _ = strings.Cut(rest, ", used: ")
	qe.Used, qe.Limited, _ = strings.Cut(rest, ", limited: ")
	qe.Limited = strings.TrimSpace(qe.Limited)
	return qe, true
}
