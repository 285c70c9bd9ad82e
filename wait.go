package cube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
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
// Status.Pods), re-listing when a watch ends; it never polls. A caller not
// allowed to read pods waits on the objects alone.
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
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var timer <-chan time.Time
	if o.timeout > 0 {
		t := time.NewTimer(o.timeout)
		defer t.Stop()
		timer = t.C
	}

	type key struct {
		gvk schema.GroupVersionKind
		ns  string
	}
	groups := map[key]map[string]bool{}
	current := map[ObjectRef]ObjectStatus{}
	for _, ref := range r.Objects {
		k := key{ref.GroupVersionKind, ref.Namespace}
		if groups[k] == nil {
			groups[k] = map[string]bool{}
		}
		groups[k][ref.Name] = true
		current[ref] = ObjectStatus{Ref: ref, Phase: InProgress, Reason: "NotFound"}
	}
	updates := make(chan objectUpdate)
	errc := make(chan error, len(groups)+1)
	group := 0
	for k, names := range groups {
		go r.follow(waitCtx, wc, group, k.gvk, k.ns, names, updates, errc)
		group++
	}
	go r.followPods(waitCtx, wc, updates, errc)
	var pods []PodProblem
	podsSeen := false

	listed := map[int]bool{}
	var last Status
	reported := false
	for {
		select {
		case up := <-updates:
			if up.podsSeen {
				pods, podsSeen = up.pods, true
			}
			for _, st := range up.statuses {
				current[st.Ref] = st
			}
			for _, ref := range up.gone {
				current[ref] = ObjectStatus{Ref: ref, Phase: InProgress, Reason: "NotFound"}
			}
			if up.listed {
				listed[up.group] = true
			}
			if len(listed) < len(groups) || !podsSeen {
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
			if o.progress != nil && (!reported || !sameStatus(st, last)) {
				o.progress(st)
			}
			reported, last = true, st
			switch {
			case st.Phase == Failed:
				return st, &WaitError{Release: r.Name, Until: until, Last: st, errs: []error{ErrFailed}}
			case st.Phase == until, until == Ready && st.Phase == Succeeded:
				return st, nil
			}
		case err := <-errc:
			return last, &WaitError{Release: r.Name, Until: until, Last: last, errs: []error{err}}
		case <-timer:
			return last, &WaitError{Release: r.Name, Until: until, Last: last, errs: []error{ErrTimeout}}
		case <-ctx.Done():
			errs := []error{ctx.Err()}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				errs = append(errs, ErrTimeout)
			}
			return last, &WaitError{Release: r.Name, Until: until, Last: last, errs: errs}
		}
	}
}

type objectUpdate struct {
	group    int
	statuses []ObjectStatus
	gone     []ObjectRef
	listed   bool // a full list of one group: every object's state is known
	// podsSeen: pods holds the problems of every pod of the release.
	podsSeen bool
	pods     []PodProblem
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

// follow watches the release's objects of one kind in one namespace, lists
// them, and starts over when the watch ends. It reports every change on
// updates.
func (r *Release) follow(ctx context.Context, wc client.WithWatch, group int, gvk schema.GroupVersionKind, ns string, names map[string]bool, updates chan<- objectUpdate, errc chan<- error) {
	send := sender(ctx, updates)
	onList := func(list *unstructured.UnstructuredList) bool {
		up := objectUpdate{group: group, listed: true}
		found := map[string]bool{}
		for i := range list.Items {
			item := &list.Items[i]
			if !names[item.GetName()] {
				continue
			}
			found[item.GetName()] = true
			up.statuses = append(up.statuses, readStatusWith(r.client.readers, item))
		}
		for name := range names {
			if !found[name] {
				up.gone = append(up.gone, ObjectRef{GroupVersionKind: gvk, Namespace: ns, Name: name})
			}
		}
		return send(up)
	}
	onEvent := func(ev watch.Event, u *unstructured.Unstructured) bool {
		if !names[u.GetName()] {
			return true
		}
		if u.GroupVersionKind().Kind == "" {
			u.SetGroupVersionKind(gvk)
		}
		var up objectUpdate
		if ev.Type == watch.Deleted {
			up.gone = []ObjectRef{{GroupVersionKind: gvk, Namespace: u.GetNamespace(), Name: u.GetName()}}
		} else {
			up.statuses = []ObjectStatus{readStatusWith(r.client.readers, u)}
		}
		return send(up)
	}
	r.watchLoop(ctx, wc, gvk, ns, func(err error) { errc <- err }, onList, onEvent)
}

// followPods watches the release's pods and reports the problems of all of
// them, afresh, each time one changes.
func (r *Release) followPods(ctx context.Context, wc client.WithWatch, updates chan<- objectUpdate, errc chan<- error) {
	send := sender(ctx, updates)
	problems := map[string][]PodProblem{}
	report := func() bool {
		up := objectUpdate{podsSeen: true}
		for _, name := range slices.Sorted(maps.Keys(problems)) {
			up.pods = append(up.pods, problems[name]...)
		}
		return send(up)
	}
	read := func(u *unstructured.Unstructured) {
		p := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			problems[u.GetName()] = []PodProblem{{Pod: u.GetName(), Reason: "Unreadable", Message: err.Error()}}
			return
		}
		problems[u.GetName()] = PodProblems(p)
	}
	onList := func(list *unstructured.UnstructuredList) bool {
		clear(problems)
		for i := range list.Items {
			read(&list.Items[i])
		}
		return report()
	}
	onEvent := func(ev watch.Event, u *unstructured.Unstructured) bool {
		if ev.Type == watch.Deleted {
			delete(problems, u.GetName())
		} else {
			read(u)
		}
		return report()
	}
	fail := func(err error) {
		// Pods are diagnostics: a caller who may not read them still waits
		// on the objects, as if the release had no pods.
		if apierrors.IsForbidden(err) {
			clear(problems)
			report()
			return
		}
		errc <- err
	}
	r.watchLoop(ctx, wc, corev1.SchemeGroupVersion.WithKind("Pod"), r.Namespace, fail, onList, onEvent)
}

func sender(ctx context.Context, updates chan<- objectUpdate) func(objectUpdate) bool {
	return func(up objectUpdate) bool {
		select {
		case updates <- up:
			return true
		case <-ctx.Done():
			return false
		}
	}
}

// watchLoop watches the release's objects of one kind in one namespace
// (by the release label), lists them, hands the list to onList and every
// later event to onEvent, and starts over when the watch ends, until ctx
// ends, a handler returns false, or the server refuses (reported to fail).
func (r *Release) watchLoop(ctx context.Context, wc client.WithWatch, gvk schema.GroupVersionKind, ns string, fail func(error),
	onList func(*unstructured.UnstructuredList) bool, onEvent func(watch.Event, *unstructured.Unstructured) bool) {
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	opts := []client.ListOption{client.MatchingLabels{LabelRelease: r.Name}}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	for ctx.Err() == nil {
		// Watch first, then list: every change after the list is seen, even
		// by watch implementations that ignore resourceVersion (the fake
		// client's). Events older than the list may follow it; they are
		// superseded by the events after them.
		watchList := &unstructured.UnstructuredList{}
		watchList.SetGroupVersionKind(listGVK)
		w, err := wc.Watch(ctx, watchList, opts...)
		if err != nil {
			if ctx.Err() == nil {
				fail(fmt.Errorf("watch %s: %w", gvk.Kind, err))
			}
			return
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(listGVK)
		if err := wc.List(ctx, list, opts...); err != nil {
			w.Stop()
			if ctx.Err() == nil {
				fail(fmt.Errorf("list %s: %w", gvk.Kind, err))
			}
			return
		}
		if !onList(list) || !forward(ctx, w, onEvent) {
			w.Stop()
			return
		}
		w.Stop()
	}
}

// forward hands watch events to onEvent until the watch ends or fails
// (true: start over) or ctx ends or onEvent returns false (false: stop).
func forward(ctx context.Context, w watch.Interface, onEvent func(watch.Event, *unstructured.Unstructured) bool) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Error {
				return true // re-list: the watch expired or the server closed it
			}
			u, err := asUnstructured(ev.Object)
			if err != nil {
				continue
			}
			if !onEvent(ev, u) {
				return false
			}
		}
	}
}
