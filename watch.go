package cube

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/retry"
)

// watchHub shares the watches of one Client's waits: one watch (and one
// list each time it starts) per kind and namespace of the objects waited
// on, and one per namespace for their pods, however many releases are
// waited on at once. A feed lives while a wait follows it.
type watchHub struct {
	mu    sync.Mutex
	feeds map[feedKey]*feed
}

type feedKey struct {
	gvk schema.GroupVersionKind
	ns  string
}

var (
	podGVK   = corev1.SchemeGroupVersion.WithKind("Pod")
	eventGVK = corev1.SchemeGroupVersion.WithKind("Event")
)

// feed is one shared watch of the objects of one kind in one namespace
// that carry a release label. It keeps what waits read of each object, not
// the object: its status, or for a pod its problems.
type feed struct {
	key  feedKey
	refs int // waits following the feed; guarded by watchHub.mu
	stop context.CancelFunc

	mu     sync.Mutex
	listed bool  // a full list arrived: absent objects do not exist
	err    error // the feed stopped: waits following it fail with err
	// trouble is why the feed cannot watch or list right now (the API
	// server is unreachable or failing); it keeps trying, and what it
	// read before stands until it lists again.
	trouble error
	entries map[string]feedEntry
	// seen is the newest resourceVersion the feed has shown: its list's,
	// then each event's. An object Apply wrote at or before it and absent
	// from the feed is gone; one written after it may not be shown yet.
	seen    string
	waiters map[string]map[*waiter]struct{} // by release
}

type feedEntry struct {
	release         string
	uid             string // LabelReleaseUID
	resourceVersion string
	created         time.Time
	status          ObjectStatus // objects
	problems        []PodProblem // pods
	event           *createEvent // events about creating pods
}

// waiter is one Wait. A feed puts a token in wake whenever it changes
// something of the waiter's release; the waiter then reads the feeds.
type waiter struct {
	release string
	wake    chan struct{}
}

func newWaiter(release string) *waiter {
	return &waiter{release: release, wake: make(chan struct{}, 1)}
}

func (w *waiter) notify() {
	select {
	case w.wake <- struct{}{}:
	default: // a token is already waiting
	}
}

// follow makes w follow the feed of key, starting it if no wait does. The
// feed's own context keeps ctx's values but not its end: other waits may
// follow the feed after this one returns.
func (h *watchHub) follow(ctx context.Context, c *Client, wc client.WithWatch, key feedKey, w *waiter) *feed {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.feeds == nil {
		h.feeds = map[feedKey]*feed{}
	}
	f := h.feeds[key]
	if f == nil {
		feedCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
		f = &feed{key: key, stop: stop, entries: map[string]feedEntry{}, waiters: map[string]map[*waiter]struct{}{}}
		h.feeds[key] = f
		go f.run(feedCtx, h, c.table, wc)
	}
	f.refs++
	f.mu.Lock()
	if f.waiters[w.release] == nil {
		f.waiters[w.release] = map[*waiter]struct{}{}
	}
	f.waiters[w.release][w] = struct{}{}
	f.mu.Unlock()
	return f
}

// leave undoes follow; the last wait to leave stops the feed.
func (h *watchHub) leave(f *feed, w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f.mu.Lock()
	delete(f.waiters[w.release], w)
	if len(f.waiters[w.release]) == 0 {
		delete(f.waiters, w.release)
	}
	f.mu.Unlock()
	if f.refs--; f.refs == 0 {
		f.stop()
		h.forget(f)
	}
}

// forget removes f from the hub (h.mu held), so that the next wait starts
// a new feed.
func (h *watchHub) forget(f *feed) {
	if h.feeds[f.key] == f {
		delete(h.feeds, f.key)
	}
}

// feedBackoff is how long a feed waits before it tries again to watch
// and list after a failure, or after a watch that ended at once.
var feedBackoff = retry.Policy{Backoff: 100 * time.Millisecond, Factor: 2, MaxBackoff: 5 * time.Second}

// briefWatch is how long a watch must last for the feed to start over at
// once when it ends; one that ends sooner counts as a failure.
const briefWatch = time.Second

// run watches, lists, and follows the watch until it ends, then starts
// over; it stops when ctx ends or the server refuses. While the server is
// unreachable or failing, or a watch expired (410: the resourceVersion is
// too old), it tries again with backoff for as long as waits follow it:
// they have their own timeouts.
func (f *feed) run(ctx context.Context, h *watchHub, readers kindTable, wc client.WithWatch) {
	listGVK := f.key.gvk.GroupVersion().WithKind(f.key.gvk.Kind + "List")
	// Events carry no labels: their feed keeps those about creating pods.
	var opts []client.ListOption
	if f.key.gvk != eventGVK {
		opts = append(opts, client.HasLabels{LabelRelease})
	}
	if f.key.ns != "" {
		opts = append(opts, client.InNamespace(f.key.ns))
	}
	failures := 0
	backoff := func(err error) bool {
		failures++
		if err != nil {
			f.setTrouble(err)
		}
		t := time.NewTimer(feedBackoff.Delay(failures))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
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
			err = fmt.Errorf("watch %s: %w", f.key.gvk.Kind, err)
			if ctx.Err() == nil && resumable(err) && backoff(err) {
				continue
			}
			f.fail(ctx, h, err)
			return
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(listGVK)
		if err := wc.List(ctx, list, opts...); err != nil {
			w.Stop()
			err = fmt.Errorf("list %s: %w", f.key.gvk.Kind, err)
			if ctx.Err() == nil && resumable(err) && backoff(err) {
				continue
			}
			f.fail(ctx, h, err)
			return
		}
		f.replace(readers, list.GetResourceVersion(), list.Items)
		began := time.Now()
		more := f.forward(ctx, readers, w)
		w.Stop()
		if !more {
			return
		}
		if time.Since(began) >= briefWatch {
			failures = 0
		} else if !backoff(nil) {
			return
		}
	}
}

// resumable reports whether a feed that failed with err should try again:
// the server was unreachable, overloaded or failing (even after client-go
// retried as the server asked), or the watch expired.
func resumable(err error) bool {
	if _, ok := apierrors.SuggestsClientDelay(err); ok {
		return true
	}
	return transient(err) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

func (f *feed) setTrouble(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.trouble = err
}

// troubled returns why the feed cannot follow the server right now, or nil.
func (f *feed) troubled() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.trouble
}

// fail stops the feed with err, unless the feed was stopped. Pods are
// diagnostics: a client that may not read them waits on the objects alone,
// as if the releases had no pods.
func (f *feed) fail(ctx context.Context, h *watchHub, err error) {
	if ctx.Err() != nil {
		return
	}
	f.mu.Lock()
	if (f.key.gvk == podGVK || f.key.gvk == eventGVK) && apierrors.IsForbidden(err) {
		f.listed = true
		clear(f.entries)
	} else {
		f.err = err
	}
	f.notifyAll()
	f.mu.Unlock()
	if f.err != nil {
		h.mu.Lock()
		h.forget(f)
		h.mu.Unlock()
	}
}

// forward applies watch events until the watch ends or fails (true: start
// over) or ctx ends (false).
func (f *feed) forward(ctx context.Context, readers kindTable, w watch.Interface) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Error {
				// Re-list: the watch expired (an ERROR event with 410
				// Expired: its resourceVersion is too old), the server
				// closed it (its timeout, a restart) or it failed.
				return true
			}
			u, err := asUnstructured(ev.Object)
			if err != nil {
				continue
			}
			f.apply(readers, ev.Type, u)
		}
	}
}

func (f *feed) entry(readers kindTable, u *unstructured.Unstructured) feedEntry {
	e := feedEntry{release: u.GetLabels()[LabelRelease], uid: u.GetLabels()[LabelReleaseUID],
		resourceVersion: u.GetResourceVersion(), created: u.GetCreationTimestamp().Time}
	if f.key.gvk == eventGVK {
		ev := &corev1.Event{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ev); err == nil {
			if ce, ok := createEventOf(ev); ok {
				e.event = &ce
			}
		}
		return e
	}
	if f.key.gvk == podGVK {
		p := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			e.problems = []PodProblem{{Pod: u.GetName(), Reason: "Unreadable", Message: err.Error()}}
		} else {
			e.problems = PodProblems(p)
		}
		return e
	}
	if u.GroupVersionKind().Kind == "" {
		u.SetGroupVersionKind(f.key.gvk)
	}
	e.status = readers.read(u)
	return e
}

// replace takes a full list: it is every object there is.
func (f *feed) replace(readers kindTable, version string, items []unstructured.Unstructured) {
	entries := make(map[string]feedEntry, len(items))
	for i := range items {
		if e := f.entry(readers, &items[i]); f.key.gvk != eventGVK || e.event != nil {
			entries[items[i].GetName()] = e
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries, f.listed, f.trouble, f.seen = entries, true, nil, version
	f.notifyAll()
}

func (f *feed) apply(readers kindTable, typ watch.EventType, u *unstructured.Unstructured) {
	var e feedEntry
	if typ != watch.Deleted {
		e = f.entry(readers, u)
		if f.key.gvk == eventGVK && e.event == nil {
			return
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if rv := u.GetResourceVersion(); olderThan(f.seen, rv) {
		f.seen = rv
	}
	if f.key.gvk == eventGVK {
		if typ == watch.Deleted {
			delete(f.entries, u.GetName())
		} else {
			f.entries[u.GetName()] = e
		}
		f.notifyAll()
		return
	}
	old, had := f.entries[u.GetName()]
	if typ == watch.Deleted {
		delete(f.entries, u.GetName())
	} else {
		f.entries[u.GetName()] = e
	}
	if had {
		f.notify(old.release)
	}
	f.notify(u.GetLabels()[LabelRelease])
}

// notify wakes the waits of release (f.mu held).
func (f *feed) notify(release string) {
	for w := range f.waiters[release] {
		w.notify()
	}
}

func (f *feed) notifyAll() {
	for _, ws := range f.waiters {
		for w := range ws {
			w.notify()
		}
	}
}

// statuses puts into into the status of each of refs (objects of f's kind
// and namespace) that belongs to release. An object applied with a
// resourceVersion (applied, from Apply) counts only once the feed has seen
// that version or a later one: until then it is InProgress, so that a wait
// right after an apply never judges the objects as they were before it.
func (f *feed) statuses(rel *Release, refs []ObjectRef, into map[ObjectRef]ObjectStatus, created map[ObjectRef]time.Time) (listed bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil || !f.listed {
		return false, f.err
	}
	for _, ref := range refs {
		e, ok := f.entries[ref.Name]
		switch {
		case !ok && rel.applied[ref] != "" && (f.seen == "" || olderThan(f.seen, rel.applied[ref])):
			into[ref] = ObjectStatus{Ref: ref, Phase: InProgress, Reason: "Applying"}
		case !ok:
			into[ref] = ObjectStatus{Ref: ref, Phase: Missing, Reason: "NotFound"}
		case e.release != rel.Name || rel.UID != "" && e.uid != rel.UID:
			into[ref] = ObjectStatus{Ref: ref, Phase: Missing, Reason: "NotOwned",
				Message: "an object of this name exists but another release (or no release) made it"}
		case olderThan(e.resourceVersion, rel.applied[ref]):
			into[ref] = ObjectStatus{Ref: ref, Phase: InProgress, Reason: "Applying"}
		default:
			into[ref] = e.status
			created[ref] = e.created
		}
	}
	return true, nil
}

// podProblems are the problems of release's pods, by pod name, and when
// each pod was created.
func (f *feed) podProblems(release string) (listed bool, problems []PodProblem, created map[string]time.Time, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil || !f.listed {
		return false, nil, nil, f.err
	}
	created = map[string]time.Time{}
	for _, name := range slices.Sorted(maps.Keys(f.entries)) {
		if e := f.entries[name]; e.release == release {
			problems = append(problems, e.problems...)
			created[name] = e.created
		}
	}
	return true, problems, created, nil
}

// createEvents are the feed's events about creating pods.
func (f *feed) createEvents() (listed bool, events []createEvent, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil || !f.listed {
		return false, nil, f.err
	}
	for _, e := range f.entries {
		if e.event != nil {
			events = append(events, *e.event)
		}
	}
	return true, events, nil
}

// olderThan reports whether resource version seen is older than want.
// Resource versions are opaque to clients in general; those of an API
// server on etcd (and of controller-runtime's fake client) are revision
// numbers, and only when both are numbers is seen taken as older. With no
// want (a release not applied by this program) nothing is older.
func olderThan(seen, want string) bool {
	if want == "" || seen == want {
		return false
	}
	s, err1 := strconv.ParseUint(seen, 10, 64)
	w, err2 := strconv.ParseUint(want, 10, 64)
	return err1 == nil && err2 == nil && s < w
}
