package cube

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// refKey identifies an object across API versions: a release that moves a
// kind to a newer version still owns the same object.
type refKey struct {
	group, kind, namespace, name string
}

func keyOf(r ObjectRef) refKey { return refKey{r.Group, r.Kind, r.Namespace, r.Name} }

// union returns a followed by the refs of b that a lacks.
func union(a, b []ObjectRef) []ObjectRef {
	out := slices.Clone(a)
	have := keys(a)
	for _, r := range b {
		if !have[keyOf(r)] {
			out = append(out, r)
		}
	}
	return out
}

// minus returns the refs of a that b lacks.
func minus(a, b []ObjectRef) []ObjectRef {
	var out []ObjectRef
	have := keys(b)
	for _, r := range a {
		if !have[keyOf(r)] {
			out = append(out, r)
		}
	}
	return out
}

func keys(refs []ObjectRef) map[refKey]bool {
	out := make(map[refKey]bool, len(refs))
	for _, r := range refs {
		out[keyOf(r)] = true
	}
	return out
}

// sameRefs reports whether a and b list the same objects, in any order and
// at any version.
func sameRefs(a, b []ObjectRef) bool {
	return len(minus(a, b)) == 0 && len(minus(b, a)) == 0
}

// prune deletes the objects of stale, last applied first, with foreground
// propagation as Release.Delete does, and returns those it deleted. An
// object is left alone when it is already gone or no longer carries the
// release's labels (someone else took it over); a precondition on its UID
// keeps a re-created object of the same name from being deleted.
func (c *Client) prune(ctx context.Context, release string, stale []ObjectRef, dryRun bool) ([]ObjectRef, error) {
	slices.SortFunc(stale, compareRefs)
	var deleted []ObjectRef
	var errs []error
	for i := len(stale) - 1; i >= 0; i-- {
		ref := stale[i]
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(ref.GroupVersionKind)
		err := c.retrying(ctx, func(ctx context.Context) error {
			return c.c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u)
		})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("prune %s: %w", ref, err))
			continue
		}
		if l := u.GetLabels(); l[LabelRelease] != release || l[LabelManagedBy] != ManagedBy {
			continue
		}
		uid := u.GetUID()
		opts := []client.DeleteOption{client.PropagationPolicy(metav1.DeletePropagationForeground), client.Preconditions{UID: &uid}}
		if dryRun {
			opts = append(opts, client.DryRunAll)
		}
		// A delete whose answer was lost and is retried finds the object
		// gone (or going: the same answer again).
		if err := c.retrying(ctx, func(ctx context.Context) error { return c.c.Delete(ctx, u, opts...) }); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("prune %s: %w", ref, err))
			continue
		}
		deleted = append(deleted, ref)
	}
	return deleted, errors.Join(errs...)
}
