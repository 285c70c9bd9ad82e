package cube

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/retry"
)

// Client applies workloads to a cluster and follows the releases it made. It
// talks through a controller-runtime client and sends unstructured objects, so
// it needs no scheme for third-party kinds: any CRD installed in the cluster
// works. A Client is safe for concurrent use.
type Client struct {
	// err is a problem with how the client was made (no client, a bad
	// option): every method returns it.
	err         error
	c           client.Client
	clientset   kubernetes.Interface
	namespace   string
	kinds       []Kind    // as given to Kinds
	table       kindTable // CoreKinds and kinds, built once by NewFromClient
	owner       string    // the field owner, see FieldOwner
	parallelism int
	retry       retry.Policy
	watches     watchHub // shared by the client's waits
}

// New returns a Client for the cluster cfg points at. Its controller-runtime
// client supports watches, which Release.Wait uses.
func New(cfg *rest.Config, opts ...Option) (*Client, error) {
	if cfg == nil {
		return nil, errors.New("cube: rest config is nil")
	}
	probe := &Client{}
	for _, o := range opts {
		if !isNil(o) {
			o.applyToClient(probe)
		}
	}
	if probe.err != nil {
		return nil, probe.err // a bad option, before any connection is made
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("build scheme: %w", err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create clientset: %w", err)
	}
	cl := NewFromClient(c, append([]Option{Clientset(cs)}, opts...)...)
	if cl.err != nil {
		return nil, cl.err
	}
	return cl, nil
}

// NewFromClient returns a Client on an existing controller-runtime client, for
// programs that already run a manager. Release.Wait needs c to implement
// client.WithWatch (the clients of client.NewWithWatch and of
// controller-runtime's fake package do; a manager's cached client does not:
// build one with client.NewWithWatch(mgr.GetConfig(), …) for waiting). A
// nil c, or a bad option, makes every method of the client return that
// problem.
func NewFromClient(c client.Client, opts ...Option) *Client {
	cl := &Client{c: c, namespace: metav1.NamespaceDefault, owner: DefaultFieldOwner, parallelism: DefaultApplyParallelism, retry: defaultRetry}
	if isNil(c) {
		cl.err = errors.New("cube: controller-runtime client is nil")
	}
	for _, o := range opts {
		if !isNil(o) {
			o.applyToClient(cl)
		}
	}
	cl.table = newKindTable(cl.kinds...)
	return cl
}

// usable reports why c cannot talk to a cluster: a nil or zero Client, or
// one made with a nil client or a bad option.
func (c *Client) usable() error {
	switch {
	case c == nil:
		return errors.New("cube: client is nil: make one with cube.New or cube.NewFromClient")
	case c.err != nil:
		return c.err
	case c.c == nil:
		return errors.New("cube: client has no controller-runtime client: make one with cube.New or cube.NewFromClient")
	}
	return nil
}

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

// recordPrefix names the ConfigMap that records a release's objects.
const recordPrefix = "cube-release-"

// The keys of a record's data, and the component label that marks it.
const (
	recordKey        = "objects"
	recordKindKey    = "kind"
	recordUIDKey     = "uid"
	recordAdoptedKey = "adopted"
	recordComponent  = "cube-release-record"
	labelComponent   = "app.kubernetes.io/component"
)

var (
	// ErrNotFound is wrapped by the error of Client.Release for a release
	// that has no record (never applied, or deleted).
	ErrNotFound = errors.New("release not found")
	// ErrNameTaken is wrapped by Apply's error when the workload's name
	// belongs to a release of another kind, or one of its objects to
	// another release: Apply then changes nothing of theirs.
	ErrNameTaken = errors.New("name taken by another release")
)

// recordState is the release's record as this Apply last read or wrote
// it: the objects it listed, those of them the release found in place and
// adopted, the release's kind and UID, and the record's resourceVersion
// ("" when there was no record). Writes of the record are conditional on
// that version, so that two programs applying the same release at once do
// not drop each other's objects from it.
type recordState struct {
	refs    []ObjectRef
	adopted []ObjectRef
	kind    string
	uid     string
	version string
}

// claim takes the release's identity from its record: the UID it has, or
// a new one for a new release. A record of another kind is refused: the
// name belongs to that release.
func (r *Release) claim(current recordState) error {
	if current.version == "" {
		if r.UID == "" {
			r.UID = newUID()
		}
		return nil
	}
	if current.kind != "" && r.Kind != "" && current.kind != r.Kind {
		return fmt.Errorf("apply %s %s/%s: %w: %s/%s is a %s release; choose another name, or delete that release first (Client.Release then Release.Delete)",
			r.Kind, r.Namespace, r.Name, ErrNameTaken, r.Namespace, r.Name, current.kind)
	}
	if current.uid == "" { // a record written before releases had UIDs
		current.uid = newUID()
	}
	r.UID = current.uid
	return nil
}

// newUID returns 128 random bits in hex: a label value.
func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// ownership turns an apply conflict with another release's field manager
// into an error wrapping ErrNameTaken that names that release.
func (c *Client) ownership(rel *Release, err error) error {
	var ce *ConflictError
	if !errors.As(err, &ce) {
		return err
	}
	ours := c.manager(rel)
	for _, f := range ce.Conflicts {
		owner, release, ok := strings.Cut(f.Manager, ":")
		if !ok || f.Manager == ours || validOwner(owner) != nil || !strings.Contains(release, "/") {
			continue
		}
		return fmt.Errorf("apply %s/%s: %w: %s belongs to release %s (field manager %q owns %s); rename the object or the release, delete that release, or use cube.Force to take it: %w",
			rel.Namespace, rel.Name, ErrNameTaken, ce.Object, release, f.Manager, f.Field, err)
	}
	return err
}

// openRecord makes the release's record list every object about to be
// applied before any of them is, so an apply that stops halfway leaves
// nothing Release.Delete cannot find. A new release is recorded with a
// single create; a record that already lists them all is left alone. It
// returns what the record listed before (prev) and what it lists now
// (stored); a dry run writes nothing. A record of another kind of
// workload is refused (ErrNameTaken) before anything is written.
func (c *Client) openRecord(ctx context.Context, rel *Release, dryRun bool, applyOpts []client.ApplyOption) (prev []ObjectRef, stored recordState, err error) {
	if !dryRun {
		if rel.UID == "" {
			rel.UID = newUID()
		}
		version, created, err := c.createRecord(ctx, rel)
		if err != nil {
			return nil, recordState{}, err
		}
		if created {
			return nil, recordState{refs: rel.Objects, kind: rel.Kind, uid: rel.UID, version: version}, nil
		}
	}
	current, err := c.readRecord(ctx, rel.Namespace, rel.Name)
	if err != nil {
		return nil, recordState{}, fmt.Errorf("apply: %w", err)
	}
	if err := rel.claim(current); err != nil {
		return nil, recordState{}, err
	}
	if dryRun || len(minus(rel.Objects, current.refs)) == 0 && current.uid == rel.UID && current.kind == rel.Kind {
		return current.refs, current, nil
	}
	rel.adopted = current.adopted
	stored, err = c.updateRecord(ctx, rel, current, union(current.refs, rel.Objects), applyOpts)
	if err != nil {
		return nil, recordState{}, err
	}
	return current.refs, stored, nil
}

// checkAndOpenRecord checks the pods of objs against their namespace's
// Pod Security level and opens the release's record at the same time:
// they are independent round trips (a read of the namespace, a write of
// the record), and together they are most of what Apply adds to the
// objects' own writes. When the check refuses, the record goes back to
// what it listed before (none: no record), so that a refused apply leaves
// no release behind; were that undone write lost, the record would list
// objects that do not exist, which Delete and Status take in their stride.
func (c *Client) checkAndOpenRecord(ctx context.Context, rel *Release, objs []*unstructured.Unstructured, dryRun bool, applyOpts []client.ApplyOption) (prev []ObjectRef, stored recordState, err error) {
	var psErr error
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		psErr = c.checkPodSecurity(ctx, objs)
	}()
	prev, stored, err = c.openRecord(ctx, rel, dryRun, applyOpts)
	<-checked
	switch {
	case psErr != nil && err == nil && !sameRefs(stored.refs, prev):
		return nil, recordState{}, joinErrors(fmt.Errorf("apply: %w", psErr), c.settleRecord(ctx, rel, stored, prev, applyOpts))
	case psErr != nil:
		return nil, recordState{}, fmt.Errorf("apply: %w", psErr)
	case err != nil:
		return nil, recordState{}, err
	}
	return prev, stored, nil
}

// settleRecord makes the record list objects instead of what from lists,
// or deletes it when that leaves none (see updateRecord).
func (c *Client) settleRecord(ctx context.Context, rel *Release, from recordState, objects []ObjectRef, applyOpts []client.ApplyOption) error {
	_, err := c.updateRecord(ctx, rel, from, objects, applyOpts)
	return err
}

// maxRecordConflicts bounds how often updateRecord reads the record again
// after another writer changed it.
const maxRecordConflicts = 10

// updateRecord replaces the record that lists from.refs (at from.version)
// with one listing want, deleting it when want is empty. When another
// writer changed the record in between (a conflict on the version, or the
// record is gone), it reads it again and keeps what that writer added:
// the objects the record lists now and from did not. It returns what it
// stored.
func (c *Client) updateRecord(ctx context.Context, rel *Release, from recordState, want []ObjectRef, applyOpts []client.ApplyOption) (recordState, error) {
	for conflicts := 0; ; conflicts++ {
		stored, err := c.putRecord(ctx, rel, from.version, want, applyOpts)
		if err == nil {
			return stored, nil
		}
		if !apierrors.IsConflict(err) && !(apierrors.IsNotFound(err) && from.version != "") || conflicts >= maxRecordConflicts {
			if conflicts > 0 {
				err = fmt.Errorf("%w (after %d conflicts with other writers of the record)", err, conflicts)
			}
			return recordState{}, err
		}
		current, err := c.readRecord(ctx, rel.Namespace, rel.Name)
		if err != nil {
			return recordState{}, fmt.Errorf("record release %s/%s: %w", rel.Namespace, rel.Name, err)
		}
		if current.version != "" && current.kind != "" && current.kind != rel.Kind {
			return recordState{}, fmt.Errorf("record release %s/%s: %w: a %s release took the name meanwhile", rel.Namespace, rel.Name, ErrNameTaken, current.kind)
		}
		want = union(want, minus(current.refs, from.refs))
		rel.adopted = union(rel.adopted, current.adopted)
		from = current
	}
}

// putRecord writes the record listing objects, or deletes it when there
// are none, on condition that it is at version ("": that there is none).
// The record is cube's own, so its fields are taken over from whichever
// manager wrote them.
func (c *Client) putRecord(ctx context.Context, rel *Release, version string, objects []ObjectRef, applyOpts []client.ApplyOption) (recordState, error) {
	if len(objects) == 0 {
		record := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: recordPrefix + rel.Name, Namespace: rel.Namespace}}
		var opts []client.DeleteOption
		if version != "" {
			opts = append(opts, client.Preconditions{ResourceVersion: &version})
		}
		err := c.retrying(ctx, func(ctx context.Context) error { return c.c.Delete(ctx, record, opts...) })
		if err != nil && !(apierrors.IsNotFound(err) && version == "") {
			return recordState{}, fmt.Errorf("remove release record %s/%s: %w", rel.Namespace, rel.Name, err)
		}
		return recordState{}, nil
	}
	adopted := intersect(rel.adopted, objects)
	cm := recordOf(rel, objects, adopted)
	// Server-side apply takes a resourceVersion in the applied object as
	// a precondition: a record changed since it was read is a conflict.
	cm.ResourceVersion = version
	u, err := ToUnstructured(cm)
	if err != nil {
		return recordState{}, err
	}
	opts := append(slices.Clone(applyOpts), client.ForceOwnership)
	err = c.retrying(ctx, func(ctx context.Context) error {
		return c.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), opts...)
	})
	if err != nil {
		return recordState{}, fmt.Errorf("record release %s/%s: %w", rel.Namespace, rel.Name, err)
	}
	return recordState{refs: objects, adopted: adopted, kind: rel.Kind, uid: rel.UID, version: u.GetResourceVersion()}, nil
}

// recordOf is the ConfigMap that records a release: its kind and UID, its
// objects, and those of them it adopted. It carries the release's labels
// and kind, so that Releases can select by kind.
func recordOf(rel *Release, objects, adopted []ObjectRef) *corev1.ConfigMap {
	data := map[string]string{recordKey: encodeRefs(objects), recordKindKey: rel.Kind, recordUIDKey: rel.UID}
	if len(adopted) > 0 {
		data[recordAdoptedKey] = encodeRefs(adopted)
	}
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      recordPrefix + rel.Name,
			Namespace: rel.Namespace,
			Labels: map[string]string{
				LabelManagedBy:  ManagedBy,
				LabelRelease:    rel.Name,
				LabelReleaseUID: rel.UID,
				LabelKind:       rel.Kind,
				labelComponent:  recordComponent,
			},
		},
		Data: data,
	}
}

func encodeRefs(objects []ObjectRef) string {
	refs := slices.Clone(objects)
	slices.SortFunc(refs, compareRefs)
	lines := make([]string, len(refs))
	for i, r := range refs {
		lines[i] = r.encode()
	}
	return strings.Join(lines, "\n")
}

func decodeRefs(text string) ([]ObjectRef, error) {
	var out []ObjectRef
	for line := range strings.SplitSeq(text, "\n") {
		if line == "" {
			continue
		}
		ref, err := decodeRef(line)
		if err != nil {
			return nil, err
		}
		out = append(out, ref)
	}
	return out, nil
}

// createRecord records a release that has no record yet, returning the
// record's resourceVersion; false when it has one. A create whose answer
// was lost and is retried finds the record it made, and reads it.
func (c *Client) createRecord(ctx context.Context, rel *Release) (string, bool, error) {
	cm := recordOf(rel, rel.Objects, nil)
	err := c.retrying(ctx, func(ctx context.Context) error { return c.c.Create(ctx, cm, client.FieldOwner(c.manager(rel))) })
	switch {
	case apierrors.IsAlreadyExists(err):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("record release %s/%s: %w", rel.Namespace, rel.Name, err)
	}
	return cm.ResourceVersion, true, nil
}

// readRecord reads the release's record: the zero recordState when the
// release was never applied (or its namespace does not exist).
func (c *Client) readRecord(ctx context.Context, namespace, name string) (recordState, error) {
	cm, err := c.getRecord(ctx, namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		return recordState{}, nil
	case err != nil:
		return recordState{}, err
	}
	rel, err := c.releaseFromRecord(cm)
	if err != nil {
		return recordState{}, err
	}
	return recordState{refs: rel.Objects, adopted: rel.adopted, kind: rel.Kind, uid: rel.UID, version: cm.ResourceVersion}, nil
}

func (c *Client) getRecord(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	var cm corev1.ConfigMap
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	err := c.retrying(ctx, func(ctx context.Context) error {
		return c.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: recordPrefix + name}, u)
	})
	if err != nil {
		return nil, fmt.Errorf("get release %s/%s: %w", namespace, name, err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cm); err != nil {
		return nil, fmt.Errorf("read release %s/%s: %w", namespace, name, err)
	}
	return &cm, nil
}

// Release returns the release name in namespace as recorded by an earlier
// Apply, for programs that follow a release they did not apply themselves.
// A release with no record (never applied, or deleted) is an error
// wrapping ErrNotFound.
func (c *Client) Release(ctx context.Context, namespace, name string) (*Release, error) {
	if err := c.usable(); err != nil {
		return nil, fmt.Errorf("get release %s/%s: %w", namespace, name, err)
	}
	cm, err := c.getRecord(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get release %s/%s: %w", namespace, name, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return c.releaseFromRecord(cm)
}

func (c *Client) releaseFromRecord(cm *corev1.ConfigMap) (*Release, error) {
	rel := &Release{client: c, Name: cm.Labels[LabelRelease], Namespace: cm.Namespace, Kind: cm.Data[recordKindKey], UID: cm.Data[recordUIDKey]}
	if rel.Name == "" {
		rel.Name = strings.TrimPrefix(cm.Name, recordPrefix)
	}
	var err error
	if rel.Objects, err = decodeRefs(cm.Data[recordKey]); err != nil {
		return nil, fmt.Errorf("read release %s/%s: %w", cm.Namespace, rel.Name, err)
	}
	if rel.adopted, err = decodeRefs(cm.Data[recordAdoptedKey]); err != nil {
		return nil, fmt.Errorf("read release %s/%s: %w", cm.Namespace, rel.Name, err)
	}
	return rel, nil
}

// Releases lists the releases recorded in namespace (all namespaces when
// namespace is empty), sorted by namespace and name.
func (c *Client) Releases(ctx context.Context, namespace string, opts ...ReleasesOption) ([]*Release, error) {
	if err := c.usable(); err != nil {
		return nil, fmt.Errorf("list releases: %w", err)
	}
	var o releasesOptions
	for _, opt := range opts {
		if !isNil(opt) {
			opt.applyToReleases(&o)
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMapList"})
	selector := client.MatchingLabels{LabelManagedBy: ManagedBy, labelComponent: recordComponent}
	if o.kind != "" {
		selector[LabelKind] = o.kind
	}
	listOpts := []client.ListOption{selector}
	if namespace != "" {
		listOpts = append(listOpts, client.InNamespace(namespace))
	}
	if err := c.retrying(ctx, func(ctx context.Context) error { return c.c.List(ctx, list, listOpts...) }); err != nil {
		return nil, fmt.Errorf("list releases: %w", err)
	}
	var out []*Release
	for i := range list.Items {
		var cm corev1.ConfigMap
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &cm); err != nil {
			return nil, fmt.Errorf("read release record %s: %w", list.Items[i].GetName(), err)
		}
		rel, err := c.releaseFromRecord(&cm)
		if err != nil {
			return nil, err
		}
		out = append(out, rel)
	}
	slices.SortFunc(out, func(a, b *Release) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out, nil
}
