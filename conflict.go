package cube

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConflictError is returned when server-side apply finds fields owned by
// another field manager.
type ConflictError struct {
	Object    ObjectRef
	Conflicts []FieldConflict
	Err       error
}

// FieldConflict is one field another manager owns.
type FieldConflict struct {
	Field   string // e.g. .spec.replicas
	Manager string // e.g. kubectl-edit
	Message string // the API server's text
}

func (e *ConflictError) Error() string {
	if e == nil {
		return "<nil ConflictError>"
	}
	parts := make([]string, 0, len(e.Conflicts))
	for _, c := range e.Conflicts {
		parts = append(parts, fmt.Sprintf("%s owned by %q", c.Field, c.Manager))
	}
	return fmt.Sprintf("apply %s: conflict: %s (use cube.Force to take them)", e.Object, strings.Join(parts, ", "))
}

func (e *ConflictError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// IsConflict reports whether err is a field-manager conflict from Apply.
func IsConflict(err error) bool {
	var ce *ConflictError
	return errors.As(err, &ce)
}

func applyError(ref ObjectRef, err error) error {
	var status apierrors.APIStatus
	if apierrors.IsConflict(err) && errors.As(err, &status) {
		details := status.Status().Details
		ce := &ConflictError{Object: ref, Err: err}
		if details != nil {
			for _, cause := range details.Causes {
				if cause.Type != metav1.CauseTypeFieldManagerConflict {
					continue
				}
				ce.Conflicts = append(ce.Conflicts, FieldConflict{
					Field: cause.Field, Manager: managerOf(cause.Message), Message: cause.Message,
				})
			}
		}
		if len(ce.Conflicts) > 0 {
			return ce
		}
	}
	return fmt.Errorf("apply %s: %w", ref, err)
}

// managerOf extracts the manager from `conflict with "kubectl" using apps/v1`.
func managerOf(msg string) string {
	_, rest, ok := strings.Cut(msg, `"`)
	if !ok {
		return ""
	}
	name, _, ok := strings.Cut(rest, `"`)
	if !ok {
		return ""
	}
	return name
}
