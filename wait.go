package cube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	// ErrTimeout is wrapped by the error Wait returns when the release did not
	// reach the phase in time. errors.As to *WaitError gives the last status.
	ErrTimeout = errors.New("timed out")
	// ErrFailed is wrapped by the error Wait returns when the release failed.
	ErrFailed = errors.New("release failed")
)

// WaitError is returned by Wait when it stops before the release reached the
// phase it waited for: it carries the last status seen and unwraps to
// ErrTimeout, ErrFailed or the context's error. Last is the zero Status when
// Wait stopped before it had read every object once.
type WaitError struct {
	Release string
	Until   Phase
	Last    Status
	errs    []error
}

func (e *WaitError) Error() string {
	if e == nil {
		return "<nil WaitError>"
	}
	return fmt.Sprintf("wait for release %s to be %s: %v; last status: %s", e.Release, e.Until, errors.Join(e.errs...), e.Last)
}

// Unwrap returns the causes, so errors.Is works for ErrTimeout, ErrFailed and
// context errors.
func (e *WaitError) Unwrap() []error {
	if e == nil {
		return nil
	}
	return e.errs
}

// WaitOption changes how Wait works.
type WaitOption func(*waitOptions)

type waitOptions struct {
	errs        []error // bad options
	timeout     time.Duration
	progress    func(Status)
	failOnStuck bool
}

// FailOnStuckPods makes Wait give up as soon as a pod of the release is
// stuck (PodProblem.Stuck: an image that cannot be pulled, a missing
// Secret or ConfigMap key, a container in CrashLoopBackOff) instead of
// waiting for the controller's own deadline or the timeout: the release is
// reported Failed with the pod's problem as the reason, and the error wraps
// ErrFailed. Without it such pods only show in the status's Pods.
func FailOnStuckPods() WaitOption { return func(o *waitOptions) { o.failOnStuck = true } }

// failOnStuck turns a status with a stuck pod into a failure.
func failOnStuck(st *Status) {
	if st.Phase == Failed {
		return
	}
	for _, p := range st.Pods {
		if p.Stuck {
			st.Phase, st.Reason = Failed, p.String()
			return
		}
	}
}

// Timeout bounds the wait; when it passes, Wait returns an error wrapping
// ErrTimeout with the last status. Zero means no bound (the context's);
// a negative d makes Wait fail before it starts.
func Timeout(d time.Duration) WaitOption {
	return func(o *waitOptions) {
		if d < 0 {
			o.errs = append(o.errs, fmt.Errorf("timeout %s is negative", d))
			return
		}
		o.timeout = d
	}
}

// OnProgress calls fn with the release status each time it changes, starting
// with the first status read. fn runs on Wait's goroutine.
func OnProgress(fn func(Status)) WaitOption { return func(o *waitOptions) { o.progress = fn } }

// Wait blocks until the release reaches until (Ready: every object Ready or
// Succeeded; Succeeded: the release Succeeded), it fails, the timeout passes
// or ctx ends. It follows the objects with watches, one per kind and
// namespace, and the release's pods with one more (their problems are in
// Status.Pods), re-listing when a watch ends; it never polls. The waits of
// one Client share those watches: a thousand releases of one kind in one
// namespace waited on at once cost two watches and their lists, not two
// thousand. Right after Apply, an object counts only once the watch has
// shown the version Apply wrote. A caller not allowed to read pods waits
// on the objects alone.
//
// Wait outlives the API server's troubles: while the server is unreachable
// or failing (a restart, 429 or 5xx answers), or a watch expires, it
// watches and lists again with backoff, and judges the release on what it
// lists then, so a job that succeeded meanwhile is seen Succeeded. The
// timeout and ctx bound it all along; the error of a wait that ends while
// the server is unreachable says so.
func (r *Release) Wait(ctx context.Context, until Phase, opts ...WaitOption) (Status, error) {
	if err := r.usable(); err != nil {
		return Status{}, fmt.Errorf("wait: %w", err)
	}
	if until != Ready && until != Succeeded {
		return Status{}, fmt.Errorf("wait: until must be %s or %s, not %q", Ready, Succeeded, until)
	}
	wc, ok := r.client.c.(client.WithWatch)
	if !ok {
		return Status{}, fmt.Errorf("wait: client %T cannot watch: build cube.Client with cube.New or pass a client.WithWatch", r.client.c)
	}
	var o waitOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if len(o.errs) > 0 {
		return Status{}, fmt.Errorf("wait: %w", errors.Join(o.errs...))
	}
	var timer <-chan time.Time
	if o.timeout > 0 {
		t := time.NewTimer(o.timeout)
		defer t.Stop()
		timer = t.C
	}

	// The waits of one client share watches (watchHub): one per kind and
	// namespace of the objects, one per namespace for the pods.
	hub := &r.client.watches
	w := newWaiter(r.Name)
	groups := map[feedKey][]ObjectRef{}
	for _, ref := range r.Objects {
		k := feedKey{ref.GroupVersionKind, ref.Namespace}
		groups[k] = append(groups[k], ref)
	}
	feeds := make(map[feedKey]*feed, len(groups))
	for k := range groups {
		feeds[k] = hub.follow(ctx, r.client, wc, k, w)
	}
	podFeed := hub.follow(ctx, r.client, wc, feedKey{podGVK, r.Namespace}, w)
	defer func() {
		for _, f := range feeds {
			hub.leave(f, w)
		}
		hub.leave(podFeed, w)
	}()
	w.notify() // feeds already listed have what this wait needs

	current := make(map[ObjectRef]ObjectStatus, len(r.Objects))
	var last Status
	reported := false
	for {
		select {
		case <-w.wake:
			listed := true
			for k, refs := range groups {
				ok, err := feeds[k].statuses(r.Name, refs, r.applied, current)
				if err != nil {
					return last, &WaitError{Release: r.Name, Until: until, Last: last, errs: []error{err}}
				}
				listed = listed && ok
			}
			podsListed, pods, err := podFeed.podProblems(r.Name)
			if err != nil {
				return last, &WaitError{Release: r.Name, Until: until, Last: last, errs: []error{err}}
			}
			if !listed || !podsListed {
				continue // judge only once every kind and the pods have been listed
			}
			objs := make([]ObjectStatus, 0, len(r.Objects))
			for _, ref := range r.Objects {
				objs = append(objs, current[ref])
			}
			st := Summarize(objs)
			if !st.settled() {
				st.Pods = pods
				if o.failOnStuck {
					failOnStuck(&st)
				}
			}
			if reported && sameStatus(st, last) {
				continue
			}
			if o.progress != nil {
				o.progress(st)
			}
			reported, last = true, st
			switch {
			case st.Phase == Failed:
				return st, &WaitError{Release: r.Name, Until: until, Last: st, errs: []error{ErrFailed}}
			case st.Phase == until, until == Ready && st.Phase == Succeeded:
				return st, nil
			}
		case <-timer:
			errs := append([]error{ErrTimeout}, troubles(feeds, podFeed)...)
			return last, &WaitError{Release: r.Name, Until: until, Last: last, errs: errs}
		case <-ctx.Done():
			errs := []error{ctx.Err()}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				errs = append(errs, ErrTimeout)
			}
			errs = append(errs, troubles(feeds, podFeed)...)
			return last, &WaitError{Release: r.Name, Until: until, Last: last, errs: errs}
		}
	}
}

// troubles are why the feeds of a wait cannot follow the server right now
// (it is unreachable, say), for the error of a wait that ends meanwhile.
func troubles(feeds map[feedKey]*feed, podFeed *feed) []error {
	var errs []error
	for _, k := range slices.SortedFunc(maps.Keys(feeds), func(a, b feedKey) int {
		return strings.Compare(a.gvk.String()+a.ns, b.gvk.String()+b.ns)
	}) {
		if err := feeds[k].troubled(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := podFeed.troubled(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

func sameStatus(a, b Status) bool {
	if a.Phase != b.Phase || a.Reason != b.Reason || len(a.Objects) != len(b.Objects) || !slices.Equal(a.Pods, b.Pods) {
		return false
	}
	for i := range a.Objects {
		if a.Objects[i] != b.Objects[i] {
			return false
		}
	}
	return true
}

func asUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: content}, nil
}
