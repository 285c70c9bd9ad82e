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
	// ErrNeverReaches is wrapped by the error Wait returns as soon as the
	// release can no longer reach the phase waited for: Succeeded for a
	// release with nothing that runs to completion, Ready for a release
	// whose objects are gone, any phase but Missing for a release with an
	// object of a kind the client cannot read.
	ErrNeverReaches = errors.New("can never reach the phase")
)

// DefaultWaitTimeout bounds a Wait given neither Timeout nor a context
// with a deadline: long enough for a training job, short enough that a
// forgotten wait does not block a program forever.
const DefaultWaitTimeout = 24 * time.Hour

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
	causes := make([]string, len(e.errs))
	for i, err := range e.errs {
		causes[i] = err.Error()
	}
	// One line: errors.Join would put a newline between the causes.
	return strings.ReplaceAll(fmt.Sprintf("wait for release %s to be %s: %s; last status: %s", e.Release, e.Until, strings.Join(causes, "; "), e.Last), "\n", " ")
}

// Unwrap returns the causes, so errors.Is works for ErrTimeout, ErrFailed and
// context errors.
func (e *WaitError) Unwrap() []error {
	if e == nil {
		return nil
	}
	return e.errs
}

// WaitOption changes how Wait works: Timeout, OnProgress,
// FailOnStuckPods.
type WaitOption interface{ applyToWait(*waitOptions) }

type waitOptions struct {
	errs        []error // bad options
	timeout     time.Duration
	progress    func(Status)
	failOnStuck bool
}

// FailOnStuckPods makes Wait give up as soon as a pod of the release is
// stuck (PodProblem.Stuck: an image that cannot be pulled, a missing
// Secret or ConfigMap key, a container in CrashLoopBackOff) or the cluster
// refused to create one (a Refusal: a quota exceeded, Pod Security, a
// LimitRange, a webhook, a missing ServiceAccount) instead of waiting for
// the controller's own deadline or the timeout: the release is reported
// Failed with the pod's problem as the reason, and the error wraps
// ErrFailed. Without it such pods only show in the status's Pods and
// Refusals.
const FailOnStuckPods waitFlag = 1

// waitFlag is a WaitOption that turns one behaviour on.
type waitFlag int

func (f waitFlag) applyToWait(o *waitOptions) {
	if f == FailOnStuckPods {
		o.failOnStuck = true
	}
}

// failOnStuck turns a status with a stuck pod into a failure.
func failOnStuck(st *Status) {
	if st.Phase == Failed {
		return
	}
	if len(st.Refusals) > 0 {
		st.Phase, st.Reason = Failed, st.Refusals[0].String()
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
// ErrTimeout with the last status. Zero means the context's deadline, or
// DefaultWaitTimeout when it has none; a negative d makes Wait fail before
// it starts.
func Timeout(d time.Duration) WaitOption { return timeoutOption(d) }

type timeoutOption time.Duration

func (d timeoutOption) applyToWait(o *waitOptions) {
	if d < 0 {
		o.errs = append(o.errs, fmt.Errorf("timeout %s is negative", time.Duration(d)))
		return
	}
	o.timeout = time.Duration(d)
}

// OnProgress calls fn with the release status each time it changes, starting
// with the first status read. fn runs on Wait's goroutine.
func OnProgress(fn func(Status)) WaitOption { return progressOption(fn) }

type progressOption func(Status)

func (fn progressOption) applyToWait(o *waitOptions) { o.progress = fn }

// Wait blocks until the release reaches until, it can no longer reach it,
// the timeout passes or ctx ends. until is any phase but Unknown: Ready
// (every object Ready or Succeeded), Succeeded (the release Succeeded),
// Failed, InProgress, or Missing (every object gone, as after Delete).
// Waiting for anything but Failed or Missing stops with ErrFailed when
// the release fails; Wait stops with ErrNeverReaches at once when the
// release cannot reach until (Succeeded for a release of Deployments and
// Services, anything but Missing for a release with an object gone or of
// a kind the client cannot read). Without a Timeout and with a ctx that
// has no deadline, DefaultWaitTimeout bounds it.
//
// It follows the objects with watches, one per kind and namespace, the
// release's pods with one more (their problems are in Status.Pods), and
// the namespace's events for the pods the cluster refused to create
// (Status.Refusals), re-listing when a watch ends; it never polls. The
// waits of one Client share those watches: a thousand releases of one
// kind in one namespace waited on at once cost three watches and their
// lists, not three thousand. Right after Apply, an object counts only
// once the watch has shown the version Apply wrote. A caller not allowed
// to read pods or events waits on the objects alone.
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
	switch until {
	case Ready, Succeeded, Failed, InProgress, Missing:
	default:
		return Status{}, fmt.Errorf("wait: until must be %s, %s, %s, %s or %s, not %q", Ready, Succeeded, Failed, InProgress, Missing, until)
	}
	wc, ok := r.client.c.(client.WithWatch)
	if !ok {
		return Status{}, fmt.Errorf("wait: client %T cannot watch: build cube.Client with cube.New or pass a client.WithWatch", r.client.c)
	}
	var o waitOptions
	for _, opt := range opts {
		if !isNil(opt) {
			opt.applyToWait(&o)
		}
	}
	if len(o.errs) > 0 {
		return Status{}, fmt.Errorf("wait: %w", joinErrors(o.errs...))
	}
	if _, ok := ctx.Deadline(); !ok && o.timeout == 0 {
		o.timeout = DefaultWaitTimeout
	}
	var timer <-chan time.Time
	if o.timeout > 0 {
		t := time.NewTimer(o.timeout)
		defer t.Stop()
		timer = t.C
	}
	// A release of known kinds none of which runs to completion never
	// succeeds; one with a kind the client cannot read fails below, on
	// that object's Unknown.
	if until == Succeeded && !slices.ContainsFunc(r.Objects, func(ref ObjectRef) bool {
		k, known := r.client.table[ref.GroupKind()]
		return !known || k.Completes
	}) {
		return Status{}, &WaitError{Release: r.Name, Until: until, errs: []error{fmt.Errorf(
			"%w: nothing in the release runs to completion (%s): wait for %s", ErrNeverReaches, refList(r.Objects), Ready)}}
	}

	// The waits of one client share watches (watchHub): one per kind and
	// namespace of the objects, one per namespace for the pods and one
	// for the events.
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
	eventFeed := hub.follow(ctx, r.client, wc, feedKey{eventGVK, r.Namespace}, w)
	defer func() {
		for _, f := range feeds {
			hub.leave(f, w)
		}
		hub.leave(podFeed, w)
		hub.leave(eventFeed, w)
	}()
	w.notify() // feeds already listed have what this wait needs

	current := make(map[ObjectRef]ObjectStatus, len(r.Objects))
	created := make(map[ObjectRef]time.Time, len(r.Objects))
	var last Status
	reported := false
	fail := func(errs ...error) (Status, error) {
		return last, &WaitError{Release: r.Name, Until: until, Last: last, errs: errs}
	}
	for {
		select {
		case <-w.wake:
			listed := true
			for k, refs := range groups {
				ok, err := feeds[k].statuses(r, refs, current, created)
				if err != nil {
					return fail(err)
				}
				listed = listed && ok
			}
			podsListed, pods, podsCreated, err := podFeed.podProblems(r.Name)
			if err != nil {
				return fail(err)
			}
			eventsListed, events, err := eventFeed.createEvents()
			if err != nil {
				return fail(err)
			}
			if !listed || !podsListed || !eventsListed {
				continue // judge only once every kind, the pods and the events have been listed
			}
			objs := make([]ObjectStatus, 0, len(r.Objects))
			for _, ref := range r.Objects {
				objs = append(objs, current[ref])
			}
			st := Summarize(objs)
			if !st.settled() && st.Phase != Missing {
				st.Pods = pods
				st.Refusals = stillRefused(refusalsOf(r.Objects, created, events), podsCreated)
				// Kueue's Workloads carry no release label to watch them
				// by; they are read when the release's objects, pods or
				// events change, as a job does when Kueue suspends,
				// admits or preempts it. A failed read leaves them out.
				st.Queue, _ = r.queueWaits(ctx)
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
			if reached(until, st) {
				return st, nil
			}
			if st.Phase == Failed && until != Missing {
				return fail(ErrFailed)
			}
			if why := never(until, st); why != "" {
				return fail(fmt.Errorf("%w: %s", ErrNeverReaches, why))
			}
		case <-timer:
			return fail(append([]error{ErrTimeout}, troubles(feeds, podFeed, eventFeed)...)...)
		case <-ctx.Done():
			errs := []error{ctx.Err()}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				errs = append(errs, ErrTimeout)
			}
			return fail(append(errs, troubles(feeds, podFeed, eventFeed)...)...)
		}
	}
}

// reached reports whether a release in st has reached until.
func reached(until Phase, st Status) bool {
	return st.Phase == until || until == Ready && st.Phase == Succeeded
}

// never says why a release in st can no longer reach until, or "".
// Objects are created only by Apply and run-to-completion objects do not
// start again, so a missing object stays missing and a finished release
// stays finished; an object the client cannot read never reads otherwise.
func never(until Phase, st Status) string {
	if until == Missing {
		return ""
	}
	for _, o := range st.Objects {
		switch o.Phase {
		case Unknown:
			return o.String()
		case Missing:
			return o.String() + ": apply the release again to create it"
		}
	}
	switch {
	case until == InProgress && (st.Phase == Succeeded || st.Phase == Failed):
		return "the release has finished: " + string(st.Phase)
	case until == Failed && st.Phase == Succeeded:
		return "the release succeeded"
	}
	return ""
}

func refList(refs []ObjectRef) string {
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ", ")
}

// troubles are why the feeds of a wait cannot follow the server right now
// (it is unreachable, say), for the error of a wait that ends meanwhile.
func troubles(feeds map[feedKey]*feed, extra ...*feed) []error {
	var errs []error
	for _, k := range slices.SortedFunc(maps.Keys(feeds), func(a, b feedKey) int {
		return strings.Compare(a.gvk.String()+a.ns, b.gvk.String()+b.ns)
	}) {
		if err := feeds[k].troubled(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range extra {
		if err := f.troubled(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func sameStatus(a, b Status) bool {
	if a.Phase != b.Phase || a.Reason != b.Reason || len(a.Objects) != len(b.Objects) || !slices.Equal(a.Pods, b.Pods) ||
		!slices.EqualFunc(a.Refusals, b.Refusals, sameRefusal) || !slices.Equal(a.Queue, b.Queue) {
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

func sameRefusal(a, b Refusal) bool {
	return a.Object == b.Object && a.Reason == b.Reason && a.Message == b.Message
}
