package cube

import (
	"context"
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

// prune deletes the objects of stale that the release owns (see
// deleteOwned; never a Namespace) and returns those it deleted and those
// it keeps in the record: the Namespaces, which go only with an explicit
// Release.Delete of the release that created them.
func (c *Client) prune(ctx context.Context, rel *Release, stale []ObjectRef, dryRun bool) (deleted, kept []ObjectRef, err error) {
	return c.deleteOwned(ctx, rel, stale, false, dryRun)
}

// deleteOwned deletes the objects of refs, last applied first, with
// foreground propagation, and returns those it deleted. It deletes only
// what the release created: an object that is gone, that no longer
// carries the release's labels and UID (someone else took it over), or
// that the release adopted is left alone, and a Namespace too unless
// namespaces is true (it is kept, and returned). A precondition on the
// object's UID keeps a re-created object of the same name from being
// deleted.
func (c *Client) deleteOwned(ctx context.Context, rel *Release, refs []ObjectRef, namespaces, dryRun bool) (deleted, kept []ObjectRef, err error) {
	refs = slices.Clone(refs)
	slices.SortFunc(refs, compareRefs)
	adopted := keys(rel.adopted)
	var errs []error
	for i := len(refs) - 1; i >= 0; i-- {
		ref := refs[i]
		if adopted[keyOf(ref)] {
			continue
		}
		if ref.Kind == "Namespace" && ref.Group == "" && !namespaces {
			kept = append(kept, ref)
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(ref.GroupVersionKind)
		err := c.retrying(ctx, func(ctx context.Context) error {
			return c.c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u)
		})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("delete %s: %w", ref, err))
			continue
		}
		if !rel.owns(u) || rel.UID == "" && u.GetLabels()[LabelReleaseUID] != "" {
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
			errs = append(errs, fmt.Errorf("delete %s: %w", ref, err))
			continue
		}
		deleted = append(deleted, ref)
	}
	return deleted, kept, joinErrors(errs...)
}
