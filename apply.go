package cube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Apply renders w and applies its objects with server-side apply (field
// manager OWNER:NAMESPACE/NAME, see FieldOwner; strict field
// validation; namespaces and configuration first; the objects of one kind
// rank go to the server concurrently, see ApplyParallelism, and when
// some fail every failure of that rank is reported). Applying the same
// workload twice changes nothing. A field owned by another manager fails
// with an error IsConflict recognises, unless Force is given; when that
// manager is another release, the error also wraps ErrNameTaken and names
// it. Apply records the release in a ConfigMap so that Releases and
// Release.Delete find its objects later.
//
// A release name belongs to one kind of workload: applying a workload of
// another kind (a PyTorchJob named like the Tenant it runs in) under a
// name in use is refused with ErrNameTaken before anything is written.
// Every object is labelled with the release's UID (LabelReleaseUID);
// an object that existed before the release applied it is adopted:
// recorded, and never deleted with the release.
//
// Before it applies anything, Apply checks the pod templates of w against
// the Pod Security level their namespace enforces (the labels of a
// Namespace applied with them, else of the stored namespace) and refuses
// with a *PodSecurityError naming each refused template and why: the API
// server would store a job whose pods it then refuses.
//
// Apply is declarative, like `kubectl apply --prune` with an applyset: the
// objects an earlier Apply of the same release made that w no longer has
// (an HPA dropped, a renamed ConfigMap) are deleted and listed in
// Release.Pruned, unless NoPrune is given. Only objects that still carry the
// release's labels and UID and that it did not adopt are deleted, and never
// a Namespace: it stays recorded until Release.Delete.
//
// A request the API server fails for a passing reason is retried as the
// client's Retry option says; when the retries are spent, the error
// wraps ErrUnavailable and the record lists every object that may exist,
// so applying again converges.
func (c *Client) Apply(ctx context.Context, w Workload, opts ...ApplyOption) (*Release, error) {
	if err := c.usable(); err != nil {
		return nil, fmt.Errorf("apply: %w", err)
	}
	var o applyOptions
	for _, opt := range opts {
		if !isNil(opt) {
			opt.applyToApply(&o)
		}
	}
	objs, err := prepare(w)
	if err != nil {
		return nil, fmt.Errorf("apply: %w", err)
	}
	ctx, warnings := collectWarnings(ctx)
	kind := workloadKind(objs)
	SortForApply(objs)
	rel, err := c.newRelease(objs)
	if err != nil {
		return nil, err
	}
	rel.Kind = kind
	manager := c.manager(rel)
	applyOpts := []client.ApplyOption{client.FieldOwner(manager)}
	if o.force {
		applyOpts = append(applyOpts, client.ForceOwnership)
	}
	if o.dryRun {
		applyOpts = append(applyOpts, client.DryRunAll)
	}
	// A release that creates its own namespace (a Tenant) gets it before
	// the record, which lives there.
	first := 0
	for i, u := range objs {
		if u.GetKind() == "Namespace" && u.GroupVersionKind().Group == "" && u.GetName() == rel.Namespace {
			first = i + 1
		}
	}
	var prev []ObjectRef
	var stored recordState
	if first > 0 {
		if err := c.checkPodSecurity(ctx, objs); err != nil {
			return nil, fmt.Errorf("apply: %w", err)
		}
		// The namespace carries the release's UID, so read the record (if
		// the namespace and it exist) before applying the namespace.
		current, err := c.readRecord(ctx, rel.Namespace, rel.Name)
		if err != nil {
			return nil, fmt.Errorf("apply: %w", err)
		}
		if err := rel.claim(current); err != nil {
			return nil, err
		}
		stamp(objs, rel.UID)
		if _, err := c.applyObjects(ctx, objs[:first], applyOpts); err != nil {
			return nil, c.ownership(rel, err)
		}
		if prev, stored, err = c.openRecord(ctx, rel, o.dryRun, applyOpts); err != nil {
			return nil, err
		}
		if stored.uid != "" && stored.uid != rel.UID { // another Apply made the record meanwhile
			rel.UID = stored.uid
			stamp(objs, rel.UID)
			if _, err := c.applyObjects(ctx, objs[:first], applyOpts); err != nil {
				return nil, c.ownership(rel, err)
			}
		}
	} else if prev, stored, err = c.checkAndOpenRecord(ctx, rel, objs, o.dryRun, applyOpts); err != nil {
		return nil, err
	}
	stamp(objs, rel.UID)
	// Objects another writer of the record (an Apply of the same release
	// elsewhere) added while this one opened it are theirs to keep.
	theirs := minus(stored.refs, union(prev, rel.Objects))
	rel.adopted = stored.adopted
	if mayExist, err := c.applyObjects(ctx, objs[first:], applyOpts); err != nil {
		err = c.ownership(rel, err)
		if !sameRefs(stored.refs, prev) { // this apply wrote the record (never in a dry run)
			// Record only what may exist: the earlier objects, those
			// applied before the failure, and those whose apply failed
			// in a way that does not say the server refused it.
			mayExist = append(rel.Objects[:first:first], mayExist...)
			rel.adopted = union(rel.adopted, adoptedOf(objs, prev, manager))
			err = joinErrors(err, c.settleRecord(ctx, rel, stored, union(union(prev, mayExist), theirs), applyOpts))
		}
		return nil, err
	}
	if !o.dryRun {
		rel.adopted = union(rel.adopted, adoptedOf(objs, prev, manager))
	}
	final := union(rel.Objects, theirs)
	if stale := minus(prev, rel.Objects); len(stale) > 0 {
		if o.noPrune {
			final = union(final, stale)
		} else {
			var kept []ObjectRef
			rel.Pruned, kept, err = c.prune(ctx, rel, stale, o.dryRun)
			if err != nil {
				return nil, fmt.Errorf("apply: %w", err)
			}
			final = union(final, kept)
		}
	}
	rel.adopted = intersect(rel.adopted, final)
	if !o.dryRun && (!sameRefs(stored.refs, final) || !sameRefs(stored.adopted, rel.adopted) || stored.kind != rel.Kind) {
		if err := c.settleRecord(ctx, rel, stored, final, applyOpts); err != nil {
			return nil, err
		}
	}
	if !o.dryRun {
		// Apply decoded the server's answer into each object.
		rel.applied = make(map[ObjectRef]string, len(objs))
		for _, u := range objs {
			rel.applied[RefOf(u)] = u.GetResourceVersion()
		}
	}
	rel.Warnings = warnings.all()
	return rel, nil
}

// workloadKind is the builder kind of a workload: the cube.dev/kind label
// of its first object that has one.
func workloadKind(objs []*unstructured.Unstructured) string {
	for _, u := range objs {
		if k := u.GetLabels()[LabelKind]; k != "" {
			return k
		}
	}
	return ""
}

// stamp labels every object with the release's UID.
func stamp(objs []*unstructured.Unstructured, uid string) {
	for _, u := range objs {
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[LabelReleaseUID] = uid
		u.SetLabels(labels)
	}
}

// maxManagerLen is the API server's limit on a field manager's name
// (k8s.io/apiserver/pkg/endpoints/handlers/rest.go, validateFieldManager).
const maxManagerLen = 128

// manager is the field manager the release applies as: the client's owner
// and the release's namespace and name, so that one release changing a
// field another release set is a conflict the API server reports. A name
// too long for the server's limit ends in a hash of the whole instead.
func (c *Client) manager(rel *Release) string {
	m := c.owner + ":" + rel.Namespace + "/" + rel.Name
	if len(m) <= maxManagerLen {
		return m
	}
	sum := sha256.Sum256([]byte(m))
	return m[:maxManagerLen-17] + "-" + hex.EncodeToString(sum[:8])
}

// adoptedOf returns the objects of objs new to the release (not in prev)
// that existed before this Apply: the server's answer names another field
// manager of the object itself (not of a subresource such as status). An
// object cube did not create is never deleted with the release.
func adoptedOf(objs []*unstructured.Unstructured, prev []ObjectRef, manager string) []ObjectRef {
	had := keys(prev)
	var out []ObjectRef
	for _, u := range objs {
		ref := RefOf(u)
		if had[keyOf(ref)] {
			continue
		}
		for _, mf := range u.GetManagedFields() {
			if mf.Manager != manager && mf.Subresource == "" {
				out = append(out, ref)
				break
			}
		}
	}
	return out
}

// intersect returns the refs of a that b has.
func intersect(a, b []ObjectRef) []ObjectRef {
	have := keys(b)
	var out []ObjectRef
	for _, r := range a {
		if have[keyOf(r)] {
			out = append(out, r)
		}
	}
	return out
}

// applyObjects applies objs, already in apply order, one rank at a time:
// the objects of a rank (all Deployments and jobs, all ConfigMaps…) go to
// the server concurrently, at most the client's parallelism at once, and a
// rank starts only when the one before it is stored. It returns the objects
// that may exist (those applied, and those whose apply failed other than
// by the server's refusal: a lost answer, a dropped connection) and, when
// some failed, every failure of the rank that stopped it.
func (c *Client) applyObjects(ctx context.Context, objs []*unstructured.Unstructured, opts []client.ApplyOption) ([]ObjectRef, error) {
	var mayExist []ObjectRef
	for start := 0; start < len(objs); {
		rank := rankOf(objs[start].GetKind())
		end := start + 1
		for end < len(objs) && rankOf(objs[end].GetKind()) == rank {
			end++
		}
		group := objs[start:end]
		errs := make([]error, len(group))
		one := func(i int) {
			// Server-side apply is idempotent: an apply the server made
			// but whose answer was lost is made again with no change.
			err := c.retrying(ctx, func(ctx context.Context) error {
				return c.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(group[i]), opts...)
			})
			if err != nil {
				errs[i] = applyError(RefOf(group[i]), err)
			}
		}
		if len(group) == 1 || c.parallelism <= 1 {
			for i := range group {
				if one(i); errs[i] != nil {
					break // in order: stop at the first failure
				}
			}
		} else {
			sem := make(chan struct{}, c.parallelism)
			var wg sync.WaitGroup
			for i := range group {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					one(i)
				})
			}
			wg.Wait()
		}
		var failed []error
		for i, err := range errs {
			switch {
			case err != nil:
				failed = append(failed, err)
				if !refused(err) {
					mayExist = append(mayExist, RefOf(group[i]))
				}
			case c.parallelism > 1 || len(failed) == 0:
				mayExist = append(mayExist, RefOf(group[i]))
			}
		}
		switch len(failed) {
		case 0:
		case 1:
			return mayExist, failed[0]
		default:
			return mayExist, joinErrors(failed...)
		}
		start = end
	}
	return mayExist, nil
}

// refused reports whether err is the API server's refusal of a write,
// which then changed nothing: a 4xx answer other than 408 (429 included:
// throttled requests are not served), or a 500 that is not the server's
// own trouble (a schema it cannot apply). Any other failure may come
// after the server made the change: its answer was lost, the connection
// dropped, its storage failed or timed out, or ctx ended with the request
// sent.
func refused(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	switch {
	case s.Code == http.StatusRequestTimeout:
		return false
	case s.Code >= 400 && s.Code < 500:
		return true
	case s.Code == http.StatusInternalServerError:
		return !serverTrouble(s.Reason)
	}
	return false
}

// newRelease names the release of objs (prepare checked they are one) and
// fills the namespace of namespaced objects.
func (c *Client) newRelease(objs []*unstructured.Unstructured) (*Release, error) {
	rel := &Release{client: c, Objects: make([]ObjectRef, 0, len(objs))}
	var errs []error
	// One REST mapping a kind, not one an object: a release of a thousand
	// Deployments asks once.
	scope := map[schema.GroupVersionKind]bool{}
	for _, u := range objs {
		rel.Name = u.GetLabels()[LabelRelease] // one release: prepare checked
		gvk := u.GroupVersionKind()
		namespaced, known := scope[gvk]
		if !known {
			var err error
			if namespaced, err = c.c.IsObjectNamespaced(u); err != nil {
				errs = append(errs, fmt.Errorf("%s %q: %w", u.GetKind(), u.GetName(), err))
				continue
			}
			scope[gvk] = namespaced
		}
		if namespaced && u.GetNamespace() == "" {
			u.SetNamespace(c.namespace)
		}
		if !namespaced {
			u.SetNamespace("")
		}
		if namespaced && rel.Namespace == "" {
			rel.Namespace = u.GetNamespace()
		}
		rel.Objects = append(rel.Objects, RefOf(u))
	}
	if rel.Namespace == "" {
		rel.Namespace = c.namespace
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("apply: %w", joinErrors(errs...))
	}
	return rel, nil
}
