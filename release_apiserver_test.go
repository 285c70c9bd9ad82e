package cube_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/kinds"
	"github.com/cubestudio/cube/retry"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
)

// countingTransport counts the requests a client sends, and among them
// the watches.
type countingTransport struct {
	next             http.RoundTripper
	requests, watchs atomic.Int64
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.requests.Add(1)
	if strings.Contains(req.URL.RawQuery, "watch=true") {
		t.watchs.Add(1)
	}
	return t.next.RoundTrip(req)
}

// countingClient is a client of env whose requests go through a fresh
// countingTransport.
func countingClient(tb testing.TB, env *testenv.Env) (client.WithWatch, *countingTransport) {
	tb.Helper()
	counter := &countingTransport{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		counter.next = rt
		return counter
	})
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		tb.Fatal(err)
	}
	return c, counter
}

func heapInUse() uint64 {
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return m.HeapInuse
}

// BenchmarkWait1000Releases starts 1,000 concurrent waits, each on a
// release of one Deployment (none becomes ready: no controller runs), and
// counts through a counting http.RoundTripper the API requests made until
// every wait has judged its release once, and the heap they hold. In the
// same run it does the same with what a program following each release
// on its own does, and cube's Wait did before its waits shared watches: a
// watch and a list of the release's Deployments and of its pods, per
// release.
func BenchmarkWait1000Releases(b *testing.B) {
	const n = 1000
	env := testenv.Get(b)
	ns := env.Namespace(b)
	ctx := b.Context()
	setup := cube.NewFromClient(env.Client, cube.Namespace(ns))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := setup.Apply(ctx, cube.Objects(deployments(fmt.Sprintf("w%d", i), ns, 1)...)); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	measure := func(b *testing.B, follow func(ctx context.Context, c client.WithWatch, rels []*cube.Release, started *sync.WaitGroup)) {
		var requests, watches, heap float64
		for b.Loop() {
			c, counter := countingClient(b, env)
			rels, err := cube.NewFromClient(c, cube.Namespace(ns)).Releases(ctx, ns)
			if err != nil {
				b.Fatal(err)
			}
			if len(rels) != n {
				b.Fatalf("%d releases", len(rels))
			}
			before, base := heapInUse(), counter.requests.Load()
			waitCtx, cancel := context.WithCancel(ctx)
			var started, done sync.WaitGroup
			started.Add(n)
			done.Go(func() { follow(waitCtx, c, rels, &started) })
			started.Wait()
			requests += float64(counter.requests.Load() - base)
			watches += float64(counter.watchs.Load())
			heap += float64(heapInUse()) - float64(before)
			cancel()
			done.Wait()
		}
		b.ReportMetric(requests/float64(b.N), "requests")
		b.ReportMetric(watches/float64(b.N), "watches")
		b.ReportMetric(heap/float64(b.N)/(1<<20), "heap-MB")
	}
	b.Run("cube", func(b *testing.B) { // Release.Wait: watches shared by the client
		b.ReportAllocs()
		measure(b, func(ctx context.Context, c client.WithWatch, rels []*cube.Release, started *sync.WaitGroup) {
			var waits sync.WaitGroup
			for _, rel := range rels {
				waits.Go(func() {
					var once sync.Once
					_, _ = rel.Wait(ctx, cube.Ready, cube.OnProgress(func(cube.Status) { once.Do(started.Done) }))
				})
			}
			waits.Wait()
		})
	})
	b.Run("baseline", func(b *testing.B) { // a watch per release, as a program without cube would
		b.ReportAllocs()
		measure(b, func(ctx context.Context, c client.WithWatch, rels []*cube.Release, started *sync.WaitGroup) {
			var waits sync.WaitGroup
			for _, rel := range rels {
				waits.Go(func() {
					var watches []watch.Interface
					defer func() {
						for _, w := range watches {
							w.Stop()
						}
					}()
					for _, gvk := range []schema.GroupVersionKind{appsv1.SchemeGroupVersion.WithKind("DeploymentList"), corev1.SchemeGroupVersion.WithKind("PodList")} {
						list := &unstructured.UnstructuredList{}
						list.SetGroupVersionKind(gvk)
						opts := []client.ListOption{client.InNamespace(ns), client.MatchingLabels{cube.LabelRelease: rel.Name}}
						w, err := c.Watch(ctx, list, opts...)
						if err != nil {
							b.Error(err)
							break
						}
						watches = append(watches, w)
						waits.Go(func() {
							for range w.ResultChan() {
							}
						})
						if err := c.List(ctx, list, opts...); err != nil {
							b.Error(err)
							break
						}
					}
					started.Done()
					<-ctx.Done()
				})
			}
			waits.Wait()
		})
	})
}

// Faults on the test API server: kube-apiserver stopped (SIGKILL) and
// started again on the same port and etcd (testenv.Env.StopAPIServer),
// and a fault proxy in front of it (testenv.Env.Proxy) that answers
// chosen requests with 429, 5xx or a dropped connection, expires watches,
// or stops the server after the Kth write. No controller runs: the tests
// write Job status themselves (cubetest.MarkObject), directly to the API
// server while the client under test cannot reach it.

// faultRetry keeps the tests short: four retries over 1.5 s.
var faultRetry = retry.Policy{Limit: 4, Backoff: 100 * time.Millisecond, Factor: 2, MaxBackoff: 800 * time.Millisecond}

// proxied is a cube client that talks to env through p.
func proxied(t *testing.T, p *testenv.Proxy, ns string, opts ...cube.Option) *cube.Client {
	t.Helper()
	c, err := cube.New(p.Config, append([]cube.Option{cube.Namespace(ns), cube.Retry(faultRetry)}, opts...)...)
	require.NoError(t, err)
	return c
}

// releaseKinds are the kinds the fault tests' releases use.
var releaseKinds = []schema.GroupVersionKind{
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	corev1.SchemeGroupVersion.WithKind("Service"),
	appsv1.SchemeGroupVersion.WithKind("Deployment"),
	batchv1.SchemeGroupVersion.WithKind("Job"),
}

// existing lists, straight from the API server, the objects that carry
// release's label (its record aside), as "Kind name". Objects being
// deleted do not count: with no garbage collector running, an object
// deleted with foreground propagation keeps its finalizer.
func existing(t *testing.T, env *testenv.Env, ns, release string) []string {
	t.Helper()
	var out []string
	for _, gvk := range releaseKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{cube.LabelRelease: release}))
		for _, u := range list.Items {
			if strings.HasPrefix(u.GetName(), "cube-release-") || u.GetDeletionTimestamp() != nil {
				continue
			}
			out = append(out, gvk.Kind+" "+u.GetName())
		}
	}
	slices.Sort(out)
	return out
}

// recorded reads release's record straight from the API server, as
// "Kind name"; nil when there is none.
func recorded(t *testing.T, env *testenv.Env, ns, release string) []string {
	t.Helper()
	var cm corev1.ConfigMap
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cube-release-" + release}, &cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	var out []string
	for line := range strings.SplitSeq(cm.Data["objects"], "\n") {
		if f := strings.Fields(line); len(f) == 4 {
			out = append(out, f[1]+" "+f[3])
		}
	}
	slices.Sort(out)
	return out
}

// webRelease is a release of a ConfigMap, a Service and n Deployments.
func webRelease(name, ns string, n int) cube.Workload {
	return cube.WorkloadFunc(func() ([]client.Object, error) {
		objs, err := webApp(name, ns, 1).Objects()
		if err != nil {
			return nil, err
		}
		id := cube.Identity{Kind: "web", Release: name, PartOf: "shop"}
		for _, d := range deployments(name, ns, n) {
			d.SetLabels(id.Labels())
			objs = append(objs, d)
		}
		return objs, nil
	})
}

// stopAfter stops env's kube-apiserver when a request reaches the hook,
// before the request goes on (and so fails).
func stopAfter(t *testing.T, env *testenv.Env) func(*http.Request) {
	return func(*http.Request) {
		if err := env.StopAPIServerFor(t); err != nil {
			t.Error(err)
		}
	}
}

func restart(t *testing.T, env *testenv.Env) {
	t.Helper()
	began := time.Now()
	require.NoError(t, env.StartAPIServer(t.Context()))
	t.Logf("kube-apiserver restarted in %s", time.Since(began).Round(time.Millisecond))
}

func countPatches(p *testenv.Proxy, resource, name string) int {
	return p.Count(func(r testenv.Request) bool {
		return r.Method == http.MethodPatch && strings.Contains(r.Path, "/"+resource+"/"+name)
	})
}

// TestApplyWhenTheAPIServerStopsBetweenRanks stops kube-apiserver when
// Apply, having stored the ConfigMap rank and the record, sends its
// Service: Apply retries as its Retry says and fails naming the object
// and ErrUnavailable; the record lists at least everything that exists;
// once the server is back, applying again converges, the record lists
// exactly what exists, and Delete leaves nothing.
func TestApplyWhenTheAPIServerStopsBetweenRanks(t *testing.T) {
	testApplyWhenTheAPIServerStops(t, "between-ranks", 0, 1, []string{"ConfigMap between-ranks-config"})
}

// TestApplyWhenTheAPIServerStopsMidRank is the same with the server
// stopped on the fourth of eleven Deployments, applied one at a time:
// three of the rank are stored, the rest are not.
func TestApplyWhenTheAPIServerStopsMidRank(t *testing.T) {
	testApplyWhenTheAPIServerStops(t, "mid-rank", 3, 1, []string{
		"ConfigMap mid-rank-config", "Deployment mid-rank", "Deployment mid-rank-0", "Deployment mid-rank-1", "Service mid-rank",
	})
}

// TestApplyWhenTheAPIServerStopsMidParallelRank stops the server on the
// fourth Deployment while the others of the rank are in flight, eight at
// a time: those may or may not have reached the server, so the record
// must keep every one.
func TestApplyWhenTheAPIServerStopsMidParallelRank(t *testing.T) {
	testApplyWhenTheAPIServerStops(t, "mid-parallel", 3, 8, nil)
}

// testApplyWhenTheAPIServerStops stops the server on the first PATCH of
// a Service (skip 0) or after skip Deployment PATCHes, and checks what
// exists after the failed Apply (when want is not nil), the record, a
// second Apply and Delete.
func testApplyWhenTheAPIServerStops(t *testing.T, release string, skip, parallelism int, want []string) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	proxy := env.Proxy(t)
	c := proxied(t, proxy, ns, cube.ApplyParallelism(parallelism))
	ctx := t.Context()
	w := webRelease(release, ns, 10)

	resource := "services"
	if skip > 0 {
		resource = "deployments"
	}
	stop := proxy.Inject(&testenv.Fault{Name: "stop", Match: testenv.Patches(resource), Skip: skip, Times: 1, Hook: stopAfter(t, env)})
	began := time.Now()
	_, err := c.Apply(ctx, w)
	elapsed := time.Since(began)
	require.Error(t, err)
	require.Equal(t, 1, stop.Hits())
	t.Logf("apply failed after %s: %v", elapsed.Round(time.Millisecond), err)
	assert.ErrorIs(t, err, cube.ErrUnavailable)
	assert.ErrorContains(t, err, "after 5 attempts")
	assert.Less(t, elapsed, 30*time.Second, "retries are bounded")
	if skip == 0 {
		assert.ErrorContains(t, err, "apply Service "+ns+"/"+release+": API server unavailable after 5 attempts")
		assert.Equal(t, 5, countPatches(proxy, "services", release), "one attempt and four retries")
	} else {
		assert.ErrorContains(t, err, "apply Deployment.apps "+ns+"/"+release)
	}
	assert.ErrorContains(t, err, "record release", "the record could not be settled with the server down either")

	restart(t, env)
	before := existing(t, env, ns, release)
	record := recorded(t, env, ns, release)
	t.Logf("after the failed apply: %d objects exist, the record lists %d", len(before), len(record))
	assert.Subset(t, record, before, "nothing exists that the record does not list")
	if want != nil {
		assert.Equal(t, want, before)
	}

	rel, err := c.Apply(ctx, w)
	require.NoError(t, err, "applying again converges")
	after := existing(t, env, ns, release)
	assert.Len(t, after, 13)
	assert.Equal(t, after, recorded(t, env, ns, release), "the record lists exactly what exists")

	require.NoError(t, rel.Delete(ctx))
	assert.Empty(t, existing(t, env, ns, release), "Delete finds everything")
	assert.Nil(t, recorded(t, env, ns, release))
}

// TestApplyOutlivesAQuickRestart stops kube-apiserver on Apply's first
// Deployment and starts it again while Apply retries: the Apply succeeds.
func TestApplyOutlivesAQuickRestart(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	proxy := env.Proxy(t)
	// Enough retries to outlast a restart on a busy machine.
	c := proxied(t, proxy, ns, cube.Retry(retry.Policy{Limit: 30, Backoff: 250 * time.Millisecond, Factor: 2, MaxBackoff: 2 * time.Second}))
	ctx := t.Context()
	var restarted sync.WaitGroup
	proxy.Inject(&testenv.Fault{Name: "restart", Match: testenv.Patches("deployments"), Times: 1, Hook: func(*http.Request) {
		if err := env.StopAPIServerFor(t); err != nil {
			t.Error(err)
			return
		}
		restarted.Go(func() {
			if err := env.StartAPIServer(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}})
	rel, err := c.Apply(ctx, webRelease("quick", ns, 3))
	restarted.Wait()
	require.NoError(t, err)
	assert.Equal(t, existing(t, env, ns, "quick"), recorded(t, env, ns, "quick"))
	assert.Len(t, rel.Objects, 6)
	retries := countPatches(proxy, "deployments", "") - 4
	t.Logf("%d Deployment apply retries while the server restarted", retries)
	assert.Positive(t, retries)
}

// TestApplyRetriesThrottlingAndServerErrors answers the Deployments of one
// Apply with each transient failure: 429 with Retry-After (client-go
// retries it, and cube does not retry it again), 429 without, 503, 500
// after the server stored the apply (the answer is lost), a dropped
// connection, and 503 on the record. Apply succeeds; each object took
// exactly the attempts its faults called for; the objects applied twice
// are as if applied once (generation 1, one field manager).
func TestApplyRetriesThrottlingAndServerErrors(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	proxy := env.Proxy(t)
	c := proxied(t, proxy, ns)
	ctx := t.Context()
	const release = "throttled"
	faults := []*testenv.Fault{
		{Name: "429 Retry-After", Match: named("deployments", release+"-0"), Times: 2, Status: http.StatusTooManyRequests, RetryAfter: time.Second},
		{Name: "429", Match: named("deployments", release+"-1"), Times: 2, Status: http.StatusTooManyRequests},
		{Name: "503", Match: named("deployments", release+"-2"), Times: 2, Status: http.StatusServiceUnavailable},
		{Name: "500 after storing", Match: named("deployments", release+"-3"), Times: 2, Status: http.StatusInternalServerError, Forward: true},
		{Name: "drop", Match: named("deployments", release+"-4"), Times: 1, Drop: true},
		{Name: "record 503", Match: createsConfigMaps, Times: 1, Status: http.StatusServiceUnavailable},
	}
	for _, f := range faults {
		proxy.Inject(f)
	}
	_, err := c.Apply(ctx, webRelease(release, ns, 6))
	require.NoError(t, err)
	injected := 0
	for _, f := range faults {
		injected += f.Hits()
	}
	assert.Equal(t, 10, injected)
	for i, want := range []int{3, 3, 3, 3, 2, 1} {
		assert.Equal(t, want, countPatches(proxy, "deployments", fmt.Sprintf("%s-%d", release, i)), "attempts of deployment %d", i)
	}
	records := proxy.Count(func(r testenv.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/configmaps")
	})
	assert.Equal(t, 2, records, "the record's create, retried once")
	for i := range 6 {
		var d appsv1.Deployment
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("%s-%d", release, i)}, &d))
		assert.Equal(t, int64(1), d.Generation, "deployment %d changed once", i)
		var managers []string
		for _, m := range d.ManagedFields {
			managers = append(managers, m.Manager+"/"+string(m.Operation))
		}
		assert.Equal(t, []string{"cube:" + ns + "/" + release + "/Apply"}, managers, "deployment %d", i)
	}
	assert.Equal(t, existing(t, env, ns, release), recorded(t, env, ns, release))
}

// TestApplyGivesUpOnEndlessThrottling answers every apply of one
// Deployment with 429 and Retry-After: client-go retries it ten times,
// waiting as asked, and cube adds no retries of its own.
func TestApplyGivesUpOnEndlessThrottling(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	proxy := env.Proxy(t)
	c := proxied(t, proxy, ns)
	proxy.Inject(&testenv.Fault{Name: "429", Match: named("deployments", "endless-0"), Status: http.StatusTooManyRequests, RetryAfter: time.Second})
	began := time.Now()
	_, err := c.Apply(t.Context(), webRelease("endless", ns, 1))
	require.Error(t, err)
	t.Logf("gave up after %s: %v", time.Since(began).Round(time.Millisecond), err)
	assert.True(t, apierrors.IsTooManyRequests(err), "%v", err)
	assert.NotErrorIs(t, err, cube.ErrUnavailable, "cube did not retry what client-go retried")
	assert.Equal(t, 11, countPatches(proxy, "deployments", "endless-0"), "client-go's ten retries, no more")
	assert.GreaterOrEqual(t, time.Since(began), 10*time.Second, "each retry waited as the server asked")
	assert.Subset(t, recorded(t, env, ns, "endless"), existing(t, env, ns, "endless"))
}

// TestApplyRetriesRecordConflicts writes the release's record behind
// Apply's back, as a concurrent Apply of the same release would, between
// Apply's read of the record and its write: the write conflicts on the
// resourceVersion, Apply reads the record again and keeps the other
// writer's object, and Delete removes it too.
func TestApplyRetriesRecordConflicts(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	proxy := env.Proxy(t)
	c := proxied(t, proxy, ns)
	ctx := t.Context()
	id := cube.Identity{Kind: "web", Release: "shared"}
	cm := func(name string) client.Object {
		return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: id.ObjectMeta(name, ns, nil, nil), Data: map[string]string{"k": "v"}}
	}
	_, err := c.Apply(ctx, cube.Objects(cm("a")))
	require.NoError(t, err)

	// The other writer: it applied "x" and added it to the record.
	other := cube.NewFromClient(env.Client, cube.Namespace(ns))
	proxy.Inject(&testenv.Fault{Name: "concurrent writer", Match: func(r *http.Request) bool {
		return r.Method == http.MethodPatch && testenv.Named("configmaps", "cube-release-shared")(r)
	}, Times: 1, Hook: func(*http.Request) {
		if _, err := other.Apply(context.Background(), cube.Objects(cm("a"), cm("x")), cube.NoPrune); err != nil {
			t.Error(err)
		}
	}})
	rel, err := c.Apply(ctx, cube.Objects(cm("a"), cm("b")))
	require.NoError(t, err)
	assert.Equal(t, []string{"ConfigMap a", "ConfigMap b", "ConfigMap x"}, recorded(t, env, ns, "shared"), "neither writer's object is lost")
	assert.Equal(t, existing(t, env, ns, "shared"), recorded(t, env, ns, "shared"))
	writes := proxy.Count(func(r testenv.Request) bool {
		return r.Method == http.MethodPatch && strings.HasSuffix(r.Path, "/configmaps/cube-release-shared")
	})
	t.Logf("record writes through the proxy: %d", writes)
	assert.Equal(t, 2, writes, "one conflict, one retry after reading the record again")

	require.NoError(t, rel.Delete(ctx))
	assert.Empty(t, existing(t, env, ns, "shared"), "the other writer's object is not orphaned")
}

// createsConfigMaps matches the creation of a ConfigMap: a new release's
// record.
func createsConfigMaps(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/configmaps")
}

func named(resource, name string) func(*http.Request) bool {
	return testenv.Named(resource, name)
}

// jobRelease is a release of one batch Job.
func jobRelease(name, ns string) cube.Workload {
	id := cube.Identity{Kind: "batch", Release: name}
	return cube.WorkloadFunc(func() ([]client.Object, error) {
		return []client.Object{&batchv1.Job{
			TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
			ObjectMeta: id.ObjectMeta(name, ns, nil, nil),
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: id.Labels()},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "busybox:1.36", Command: []string{"true"}}},
				},
			}},
		}}, nil
	})
}

// proxiedJob applies a release of one Job, name, in a fresh namespace
// through a fresh proxy.
func proxiedJob(t *testing.T, name string) (*testenv.Env, string, *testenv.Proxy, *cube.Release) {
	t.Helper()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	proxy := env.Proxy(t)
	rel, err := proxied(t, proxy, ns).Apply(t.Context(), jobRelease(name, ns))
	require.NoError(t, err)
	return env, ns, proxy, rel
}

// waitInBackground starts rel.Wait and returns a channel with its result
// and one that gets each status it reports.
func waitInBackground(ctx context.Context, rel *cube.Release, until cube.Phase, opts ...cube.WaitOption) (<-chan waitResult, <-chan cube.Status) {
	done := make(chan waitResult, 1)
	progress := make(chan cube.Status, 100)
	opts = append(opts, cube.OnProgress(func(st cube.Status) {
		select {
		case progress <- st:
		default:
		}
	}))
	go func() {
		st, err := rel.Wait(ctx, until, opts...)
		done <- waitResult{st, err}
	}()
	return done, progress
}

type waitResult struct {
	st  cube.Status
	err error
}

func jobRef(ns, name string) cube.ObjectRef {
	return cube.ObjectRef{GroupVersionKind: batchv1.SchemeGroupVersion.WithKind("Job"), Namespace: ns, Name: name}
}

// TestWaitSeesWhatHappenedWhileTheAPIServerWasDown follows a Job
// through a proxy; kube-apiserver is stopped mid-wait and started again,
// and the Job succeeds while the wait cannot reach it (the proxy drops
// its requests: a restart seen from the client). Once it can, the wait
// lists again and reports Succeeded.
func TestWaitSeesWhatHappenedWhileTheAPIServerWasDown(t *testing.T) {
	env, ns, proxy, rel := proxiedJob(t, "down")
	ctx := t.Context()
	done, progress := waitInBackground(ctx, rel, cube.Succeeded, cube.Timeout(5*time.Minute))
	select {
	case st := <-progress:
		require.Equal(t, cube.InProgress, st.Phase)
	case r := <-done:
		t.Fatalf("wait ended before the fault: %v %v", r.st, r.err)
	}

	cut := proxy.Inject(&testenv.Fault{Name: "down", Drop: true})
	require.NoError(t, env.StopAPIServerFor(t))
	time.Sleep(2 * time.Second) // the wait's watches break and it tries again
	restart(t, env)
	require.NoError(t, cubetest.MarkObject(ctx, env.Client, jobRef(ns, "down"), cube.Succeeded, "", ""))
	time.Sleep(time.Second)
	select {
	case r := <-done:
		t.Fatalf("wait ended while it could not reach the server: %v %v", r.st, r.err)
	default:
	}
	proxy.Clear()
	dropped := cut.Hits()
	select {
	case r := <-done:
		require.NoError(t, r.err)
		assert.Equal(t, cube.Succeeded, r.st.Phase)
	case <-time.After(time.Minute):
		t.Fatal("the wait did not resume within a minute of the server coming back")
	}
	jobLists := proxy.Count(func(r testenv.Request) bool {
		return !r.Watch && r.Method == http.MethodGet && strings.HasSuffix(r.Path, "/jobs") && r.Fault == ""
	})
	t.Logf("%d requests dropped while down; %d job lists went through", dropped, jobLists)
	assert.Positive(t, dropped)
	// client-go hands back an empty watch for a GET whose connection kept
	// dropping, so the wait may resume on a list alone.
	assert.GreaterOrEqual(t, jobLists, 2, "the wait listed the jobs again once it could")
}

// TestWaitHonoursTimeoutAndContextWhileTheAPIServerIsDown waits on a
// release while kube-apiserver is stopped: the timeout and the context
// end the wait on time, and the error says why the wait saw nothing.
func TestWaitHonoursTimeoutAndContextWhileTheAPIServerIsDown(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	c, err := cube.New(env.Config, cube.Namespace(ns), cube.Retry(faultRetry))
	require.NoError(t, err)
	ctx := t.Context()
	rel, err := c.Apply(ctx, jobRelease("timeout", ns))
	require.NoError(t, err)
	require.NoError(t, env.StopAPIServerFor(t))

	began := time.Now()
	_, err = rel.Wait(ctx, cube.Succeeded, cube.Timeout(2*time.Second))
	elapsed := time.Since(began)
	require.Error(t, err)
	t.Logf("timed out after %s: %v", elapsed.Round(time.Millisecond), err)
	assert.ErrorIs(t, err, cube.ErrTimeout)
	assert.ErrorContains(t, err, "connection refused")
	assert.Less(t, elapsed, 3*time.Second)

	cancelCtx, cancel := context.WithCancel(ctx)
	time.AfterFunc(time.Second, cancel)
	began = time.Now()
	_, err = rel.Wait(cancelCtx, cube.Succeeded)
	elapsed = time.Since(began)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Less(t, elapsed, 2*time.Second)

	deadline, stop := context.WithTimeout(ctx, time.Second)
	defer stop()
	_, err = rel.Wait(deadline, cube.Succeeded)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, cube.ErrTimeout)

	// And the server coming back mid-wait: the wait resumes and sees the
	// job succeed.
	done, _ := waitInBackground(ctx, rel, cube.Succeeded, cube.Timeout(5*time.Minute))
	restart(t, env)
	require.NoError(t, cubetest.MarkObject(ctx, env.Client, jobRef(ns, "timeout"), cube.Succeeded, "", ""))
	select {
	case r := <-done:
		require.NoError(t, r.err)
		assert.Equal(t, cube.Succeeded, r.st.Phase)
	case <-time.After(time.Minute):
		t.Fatal("the wait did not resume")
	}
}

// TestWaitResumesAfterWatchesExpireAndFail expires the wait's Job
// watches (an ERROR event with 410 "too old resource version"), answers
// its Pod watches with 410 and its Job lists with 503 and 429: the wait
// lists again each time, and reports the job's success, written while its
// watches were failing.
func TestWaitResumesAfterWatchesExpireAndFail(t *testing.T) {
	env, ns, proxy, rel := proxiedJob(t, "expire")
	ctx := t.Context()

	lists := func(resource string) func(*http.Request) bool {
		return func(r *http.Request) bool {
			return r.Method == http.MethodGet && !strings.Contains(r.URL.RawQuery, "watch=") && strings.HasSuffix(r.URL.Path, "/"+resource)
		}
	}
	faults := []*testenv.Fault{
		proxy.Inject(&testenv.Fault{Name: "expire", Match: testenv.Watches("jobs"), Times: 3, Expire: true}),
		proxy.Inject(&testenv.Fault{Name: "410", Match: testenv.Watches("pods"), Times: 2, Status: http.StatusGone}),
		proxy.Inject(&testenv.Fault{Name: "503", Match: lists("jobs"), Times: 1, Status: http.StatusServiceUnavailable}),
		proxy.Inject(&testenv.Fault{Name: "429", Match: lists("jobs"), Times: 1, Status: http.StatusTooManyRequests}),
	}
	done, _ := waitInBackground(ctx, rel, cube.Succeeded, cube.Timeout(2*time.Minute))
	require.Eventually(t, func() bool { return faults[0].Hits() >= 1 }, time.Minute, 10*time.Millisecond)
	require.NoError(t, cubetest.MarkObject(ctx, env.Client, jobRef(ns, "expire"), cube.Succeeded, "", ""))
	select {
	case r := <-done:
		require.NoError(t, r.err)
		assert.Equal(t, cube.Succeeded, r.st.Phase)
	case <-time.After(2 * time.Minute):
		t.Fatal("the wait did not end")
	}
	injected := 0
	for _, f := range faults {
		t.Logf("%s: %d", f.Name, f.Hits())
		injected += f.Hits()
	}
	assert.Equal(t, 3, faults[0].Hits(), "every expiry was met: the wait re-watched")
	assert.Equal(t, 2, faults[1].Hits())
	jobWatches := proxy.Count(func(r testenv.Request) bool { return r.Watch && strings.HasSuffix(r.Path, "/jobs") })
	t.Logf("%d faults injected; %d job watches", injected, jobWatches)
	jobLists := proxy.Count(func(r testenv.Request) bool {
		return !r.Watch && r.Method == http.MethodGet && strings.HasSuffix(r.Path, "/jobs")
	})
	t.Logf("%d job lists", jobLists)
	// Unloaded, the three watches expired and the list after the third saw
	// the job succeed (3 watches, 3 lists: 503, 429, then that list). On a
	// loaded machine the success can be written after that list, and a
	// fourth watch or list sees it; more than one extra is a wait that
	// re-lists in a loop.
	assert.GreaterOrEqual(t, jobWatches, 3, "the three expired watches")
	assert.LessOrEqual(t, jobWatches, 4, "job watches")
	assert.GreaterOrEqual(t, jobLists, 3, "503, 429, then the list that saw the success")
	assert.LessOrEqual(t, jobLists, 4, "job lists")
}

// TestWaitFailsOnRefusal keeps a wait from retrying what will never pass:
// a watch the server refuses (403) ends it with that error at once.
func TestWaitFailsOnRefusal(t *testing.T) {
	_, _, proxy, rel := proxiedJob(t, "refused")
	proxy.Inject(&testenv.Fault{Name: "403", Match: testenv.Watches("jobs"), Status: http.StatusForbidden})
	began := time.Now()
	_, err := rel.Wait(t.Context(), cube.Succeeded, cube.Timeout(time.Minute))
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.False(t, errors.Is(err, cube.ErrTimeout))
	assert.Less(t, time.Since(began), 10*time.Second)
}

// Pruning against the real kube-apiserver (internal/testsupport/testenv). No garbage
// collector runs there: a foreground deletion leaves the object marked for
// deletion, which is what the tests look for.

// recordRef names the ConfigMap that records release name.
func recordRef(ns, name string) cube.ObjectRef {
	return cube.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: ns, Name: "cube-release-" + name}
}

// without is w minus its objects of kind.
func without(w cube.Workload, kind string) cube.Workload {
	return cube.WorkloadFunc(func() ([]client.Object, error) {
		objs, err := w.Objects()
		var out []client.Object
		for _, o := range objs {
			if o.GetObjectKind().GroupVersionKind().Kind != kind {
				out = append(out, o)
			}
		}
		return out, err
	})
}

func kindsOf(refs []cube.ObjectRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.Kind
	}
	return out
}

// deleted reports whether ref is gone or marked for deletion.
func deleted(t *testing.T, env *testenv.Env, ref cube.ObjectRef) bool {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ref.GroupVersionKind)
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u)
	if apierrors.IsNotFound(err) {
		return true
	}
	require.NoError(t, err)
	return u.GetDeletionTimestamp() != nil
}

func TestApplyPrunesWhatTheReleaseNoLongerHas(t *testing.T) {
	c, env, ns := newClient(t)
	ctx := t.Context()
	first, err := c.Apply(ctx, webApp("shop", "", 1))
	require.NoError(t, err)
	svc := first.Objects[1]
	require.Equal(t, "Service", svc.Kind)
	record := resourceVersions(t, env, &cube.Release{Objects: []cube.ObjectRef{recordRef(ns, "shop")}})

	// An identical apply prunes nothing and leaves the record untouched.
	again, err := c.Apply(ctx, webApp("shop", "", 1))
	require.NoError(t, err)
	assert.Empty(t, again.Pruned)
	assert.Equal(t, record, resourceVersions(t, env, &cube.Release{Objects: []cube.ObjectRef{recordRef(ns, "shop")}}))

	// A dry run reports what would go and deletes nothing.
	dry, err := c.Apply(ctx, without(webApp("shop", "", 1), "Service"), cube.DryRun)
	require.NoError(t, err)
	assert.Equal(t, []cube.ObjectRef{svc}, dry.Pruned)
	assert.False(t, deleted(t, env, svc))

	// NoPrune keeps the Service, and the record still lists it.
	kept, err := c.Apply(ctx, without(webApp("shop", "", 1), "Service"), cube.NoPrune)
	require.NoError(t, err)
	assert.Empty(t, kept.Pruned)
	assert.False(t, deleted(t, env, svc))
	read, err := c.Release(ctx, ns, "shop")
	require.NoError(t, err)
	assert.Equal(t, []string{"ConfigMap", "Service", "Deployment"}, kindsOf(read.Objects))

	// Without it the Service goes, and the record forgets it.
	pruned, err := c.Apply(ctx, without(webApp("shop", "", 1), "Service"))
	require.NoError(t, err)
	assert.Equal(t, []cube.ObjectRef{svc}, pruned.Pruned)
	assert.Equal(t, []string{"ConfigMap", "Deployment"}, kindsOf(pruned.Objects))
	assert.True(t, deleted(t, env, svc))
	read, err = c.Release(ctx, ns, "shop")
	require.NoError(t, err)
	assert.Equal(t, []string{"ConfigMap", "Deployment"}, kindsOf(read.Objects))
}

// An object someone else has taken over (relabelled) is not pruned.
func TestApplyDoesNotPruneWhatItNoLongerOwns(t *testing.T) {
	c, env, ns := newClient(t)
	ctx := t.Context()
	_, err := c.Apply(ctx, webApp("shop", "", 1))
	require.NoError(t, err)
	svc := &corev1.Service{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, svc))
	svc.Labels[cube.LabelRelease] = "storefront"
	require.NoError(t, env.Client.Update(ctx, svc))

	rel, err := c.Apply(ctx, without(webApp("shop", "", 1), "Service"))
	require.NoError(t, err)
	assert.Empty(t, rel.Pruned)
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, svc))
	assert.Nil(t, svc.DeletionTimestamp)
}

// An apply that stops halfway records exactly what may exist, so Delete
// finds it; one that applied nothing leaves no release behind.
func TestApplyThatFailsHalfwayKeepsAnHonestRecord(t *testing.T) {
	c, env, ns := newClient(t)
	ctx := t.Context()
	id := cube.Identity{Kind: "web", Release: "half"}
	good := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: id.ObjectMeta("half-config", "", nil, nil)}
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "half", "labels": map[string]any{cube.LabelRelease: "half"}},
		"spec":     map[string]any{"ports": []any{map[string]any{"port": int64(80)}}, "typo": true},
	}}
	_, err := c.Apply(ctx, cube.Objects(good, bad))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "typo")
	rel, err := c.Release(ctx, ns, "half")
	require.NoError(t, err)
	assert.Equal(t, []string{"ConfigMap"}, kindsOf(rel.Objects), "the ConfigMap was applied; the Service was not")
	require.NoError(t, rel.Delete(ctx))
	assert.True(t, deleted(t, env, rel.Objects[0]))

	_, err = c.Apply(ctx, cube.Objects(bad))
	require.Error(t, err)
	rels, err := c.Releases(ctx, ns)
	require.NoError(t, err)
	assert.Empty(t, rels, "nothing was applied, so no release is recorded")
}

// An apply interrupted after some of its objects are stored (its context
// cancelled, as a program stopping would) leaves a record that lists every
// object of the release that exists, so Delete removes them all: the
// record is written before the objects, never after.
func TestInterruptedApplyLeavesNothingDeleteCannotFind(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var applied atomic.Int32
	interrupting := interceptor.NewClient(env.Client, interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			err := c.Apply(ctx, obj, opts...)
			if applied.Add(1) == 5 {
				cancel()
			}
			return err
		},
	})
	c := cube.NewFromClient(interrupting, cube.Namespace(ns), cube.ApplyParallelism(2))
	const n = 40
	_, err := c.Apply(ctx, cube.Objects(deployments("cut", ns, n)...))
	require.ErrorIs(t, err, context.Canceled)

	var stored appsv1.DeploymentList
	require.NoError(t, env.Client.List(t.Context(), &stored, client.InNamespace(ns), client.MatchingLabels{cube.LabelRelease: "cut"}))
	require.NotEmpty(t, stored.Items, "the apply stopped after it had stored some objects")
	require.Less(t, len(stored.Items), n, "and before it had stored them all")
	rel, err := cube.NewFromClient(env.Client, cube.Namespace(ns)).Release(t.Context(), ns, "cut")
	require.NoError(t, err)
	recorded := map[string]bool{}
	for _, ref := range rel.Objects {
		recorded[ref.Name] = true
	}
	for _, d := range stored.Items {
		assert.True(t, recorded[d.Name], "%s exists but is not in the record", d.Name)
	}
	require.NoError(t, rel.Delete(t.Context()))
	for _, d := range stored.Items {
		ref := cube.ObjectRef{GroupVersionKind: appsv1.SchemeGroupVersion.WithKind("Deployment"), Namespace: ns, Name: d.Name}
		assert.True(t, deleted(t, env, ref), d.Name)
	}
}

// A release that creates the namespace its record lives in (a tenant) gets
// the namespace first.
func TestApplyCreatesTheNamespaceItIsRecordedIn(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := "fresh-" + strings.ToLower(rand.Text()[:8])
	t.Cleanup(func() {
		// No namespace controller runs here: the namespace stays
		// Terminating, which is enough to keep runs apart.
		if err := env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	})
	id := cube.Identity{Kind: "tenant", Release: "fresh"}
	w := cube.Objects(
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: id.ObjectMeta("settings", ns, nil, nil)},
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: id.ObjectMeta(ns, "", nil, nil)},
	)
	c := cube.NewFromClient(env.Client, cube.Namespace(ns))
	rel, err := c.Apply(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, ns, rel.Namespace)
	rels, err := c.Releases(ctx, ns)
	require.NoError(t, err)
	require.Len(t, rels, 1)
	assert.Equal(t, []string{"Namespace", "ConfigMap"}, kindsOf(rels[0].Objects))
}

// Objects of one rank go to the server together: every failure of that rank
// comes back at once, and the record keeps exactly the ones that were
// stored. With a parallelism of 1 Apply stops at the first failure.
func TestApplyReportsEveryFailureOfARank(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	id := cube.Identity{Kind: "cfg", Release: "many"}
	objs := []client.Object{}
	for i := range 8 {
		objs = append(objs, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: id.ObjectMeta(fmt.Sprintf("cm-%d", i), "", nil, nil), Data: map[string]string{"i": fmt.Sprint(i)}})
	}
	bad := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "labels": map[string]any{cube.LabelRelease: "many"}},
			"dataz":    map[string]any{"typo": "x"},
		}}
	}
	objs = append(objs[:3], append([]client.Object{bad("bad-1")}, objs[3:]...)...)
	objs = append(objs, bad("bad-2"))

	c := cube.NewFromClient(env.Client, cube.Namespace(ns))
	_, err := c.Apply(ctx, cube.Objects(objs...))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `ConfigMap `+ns+`/bad-1`)
	assert.Contains(t, err.Error(), `ConfigMap `+ns+`/bad-2`)
	assert.NotContains(t, err.Error(), "\n", "every failure, on one line")
	rel, err := c.Release(ctx, ns, "many")
	require.NoError(t, err)
	assert.Len(t, rel.Objects, 8, "the eight good ConfigMaps were stored and recorded")

	serial := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.ApplyParallelism(1))
	id2 := cube.Identity{Kind: "cfg", Release: "serial"}
	first := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: id2.ObjectMeta("s-0", "", nil, nil)}
	last := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: id2.ObjectMeta("s-2", "", nil, nil)}
	b := bad("s-1")
	b.SetLabels(map[string]string{cube.LabelRelease: "serial"})
	_, err = serial.Apply(ctx, cube.Objects(first, b, last))
	require.Error(t, err)
	rel, err = serial.Release(ctx, ns, "serial")
	require.NoError(t, err)
	assert.Equal(t, []string{"s-0"}, namesOf(rel.Objects), "in order, stopped at the failure")
	var cm corev1.ConfigMap
	assert.True(t, apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "s-2"}, &cm)))
}

func namesOf(refs []cube.ObjectRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.Name
	}
	return out
}

// A release owns what it created and nothing else, against the real
// kube-apiserver (internal/testsupport/testenv). No garbage collector or namespace
// controller runs there: a deleted Namespace stays Terminating and a
// foreground deletion leaves the object marked, which `deleted` counts.

// newTenant applies a Tenant that creates its own namespace (not one the
// test environment made), and deletes its cluster-scoped queue and
// namespace afterwards.
func newTenant(t *testing.T, env *testenv.Env, opts ...cube.Option) (*cube.Client, *cube.Release, string) {
	t.Helper()
	name := "tn-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	name = strings.Trim(name[:min(len(name), 40)], "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = env.Client.Delete(ctx, &vcscheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}})
		_ = env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	c := cube.NewFromClient(env.Client, append([]cube.Option{cube.Namespace(name), cube.Kinds(kinds.All()...)}, opts...)...)
	rel, err := c.Apply(t.Context(), tenant.New(name).Accelerators(hardware.H100, 1))
	require.NoError(t, err)
	return c, rel, name
}

func nsRef(name string) cube.ObjectRef {
	return cube.ObjectRef{GroupVersionKind: corev1.SchemeGroupVersion.WithKind("Namespace"), Name: name}
}

// The case the issue opened with: a PyTorchJob named like the tenant it
// runs in would have pruned the whole tenant, Namespace included.
func TestApplyRefusesANameTakenByAnotherKind(t *testing.T) {
	env := testenv.Get(t)
	c, team, ns := newTenant(t, env)
	assert.Equal(t, "tenant", team.Kind)
	assert.Len(t, team.UID, 32)

	job := train.PyTorch(ns).Namespace(ns).Image("busybox:1.36").Command("true")
	_, err := c.Apply(t.Context(), job)
	require.Error(t, err)
	assert.ErrorIs(t, err, cube.ErrNameTaken)
	assert.Contains(t, err.Error(), "is a tenant release")
	assert.Contains(t, err.Error(), "pytorchjob")
	assert.NotContains(t, err.Error(), "\n")
	// A dry run is refused the same way.
	_, err = c.Apply(t.Context(), job, cube.DryRun)
	assert.ErrorIs(t, err, cube.ErrNameTaken)

	// Nothing of the tenant was touched.
	for _, ref := range team.Objects {
		assert.False(t, deleted(t, env, ref), "%s", ref)
	}
	back, err := c.Release(t.Context(), ns, ns)
	require.NoError(t, err)
	assert.Equal(t, "tenant", back.Kind)
	assert.Equal(t, team.UID, back.UID)
	assert.ElementsMatch(t, team.Objects, back.Objects)

	// Under another name the job goes in beside the tenant.
	rel, err := c.Apply(t.Context(), train.PyTorch("train").Namespace(ns).Image("busybox:1.36").Command("true"))
	require.NoError(t, err)
	assert.Equal(t, "pytorchjob", rel.Kind)
	listed, err := c.Releases(t.Context(), ns, cube.OfKind("pytorchjob"))
	require.NoError(t, err)
	require.Len(t, listed, 1)
	assert.Equal(t, "train", listed[0].Name)
	all, err := c.Releases(t.Context(), ns)
	require.NoError(t, err)
	assert.Len(t, all, 2)
}

// Deleting a Tenant's release deletes the Namespace it created; a
// Namespace that existed before (an administrator's) is adopted and never
// deleted, and prune never deletes a Namespace.
func TestTenantNamespaceGoesOnlyWithTheTenantThatCreatedIt(t *testing.T) {
	env := testenv.Get(t)
	c, team, ns := newTenant(t, env)
	require.NoError(t, team.Delete(t.Context()))
	assert.True(t, deleted(t, env, nsRef(ns)), "the tenant created its namespace: it goes with it")

	// An administrator's namespace made a tenant stays when the tenant goes.
	admin := env.Namespace(t)
	c = cube.NewFromClient(env.Client, cube.Namespace(admin))
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &vcscheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: admin}})
	})
	rel, err := c.Apply(t.Context(), tenant.New(admin).CPU("4"))
	require.NoError(t, err)
	require.NoError(t, rel.Delete(t.Context()))
	assert.False(t, deleted(t, env, nsRef(admin)), "an adopted namespace is not the release's to delete")
	var quota corev1.ResourceQuota
	err = env.Client.Get(t.Context(), client.ObjectKey{Namespace: admin, Name: admin}, &quota)
	assert.True(t, apierrors.IsNotFound(err) || quota.DeletionTimestamp != nil, "what the tenant created in it goes: %v", err)
}

func TestPruneNeverDeletesANamespace(t *testing.T) {
	c, env, ns := newClient(t)
	name := ns + "-extra"
	id := cube.Identity{Kind: "bundle", Release: "bundle"}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	withNS := cube.Objects(
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: id.ObjectMeta(name, "", nil, nil)},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: id.ObjectMeta("settings", ns, nil, nil)},
	)
	first, err := c.Apply(t.Context(), withNS)
	require.NoError(t, err)
	second, err := c.Apply(t.Context(), without(withNS, "Namespace"))
	require.NoError(t, err)
	assert.Empty(t, second.Pruned)
	assert.False(t, deleted(t, env, nsRef(name)))
	// It stays in the record, so that an explicit Delete removes it.
	back, err := c.Release(t.Context(), ns, "bundle")
	require.NoError(t, err)
	assert.Contains(t, back.Objects, nsRef(name))
	require.NoError(t, first.Delete(t.Context()))
	assert.True(t, deleted(t, env, nsRef(name)))
}

// clusterRole is a cluster-scoped object of release name: the same object
// for a release of that name in any namespace.
func clusterRole(release, name string) cube.Workload {
	id := cube.Identity{Kind: "rbac", Release: release}
	return cube.Objects(&rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: id.ObjectMeta(name, "", nil, nil),
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
	})
}

// Releases of one name in two namespaces are two releases: an object one
// of them made is not the other's to change or delete.
func TestANameReusedAcrossNamespacesIsAnotherRelease(t *testing.T) {
	env := testenv.Get(t)
	nsA, nsB := env.Namespace(t), env.Namespace(t)
	role := "cube-test-" + nsA
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}})
	})
	a := cube.NewFromClient(env.Client, cube.Namespace(nsA))
	b := cube.NewFromClient(env.Client, cube.Namespace(nsB))
	relA, err := a.Apply(t.Context(), clusterRole("reader", role))
	require.NoError(t, err)

	// The same release name in another namespace applies the same
	// cluster-scoped object: refused, naming the release that has it.
	_, err = b.Apply(t.Context(), clusterRole("reader", role))
	require.Error(t, err)
	assert.ErrorIs(t, err, cube.ErrNameTaken)
	assert.True(t, cube.IsConflict(err))
	assert.Contains(t, err.Error(), "belongs to release "+nsA+"/reader")
	assert.NotContains(t, err.Error(), "\n")

	var stored rbacv1.ClusterRole
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Name: role}, &stored))
	assert.Equal(t, relA.UID, stored.Labels[cube.LabelReleaseUID], "the first release's object is untouched")

	// B's failed release, deleted, leaves A's object alone.
	relB, err := b.Release(t.Context(), nsB, "reader")
	if err == nil {
		require.NoError(t, relB.Delete(t.Context()))
	}
	assert.False(t, deleted(t, env, relA.Objects[0]))
	require.NoError(t, relA.Delete(t.Context()))
	assert.True(t, deleted(t, env, relA.Objects[0]))
}

// A record lost (deleted by hand) starts a new release: what the old one
// made keeps the old UID, and neither prune nor Delete of the new release
// touches it.
func TestALostRecordNeverDeletesTheOldReleasesObjects(t *testing.T) {
	c, env, ns := newClient(t)
	old, err := c.Apply(t.Context(), webApp("shop", "", 1))
	require.NoError(t, err)
	require.NoError(t, env.Client.Delete(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cube-release-shop"}}))
	_, err = c.Release(t.Context(), ns, "shop")
	assert.ErrorIs(t, err, cube.ErrNotFound)
	assert.NotContains(t, err.Error(), "cube-release-", "the storage stays hidden")

	renewed, err := c.Apply(t.Context(), without(webApp("shop", "", 1), "Service"))
	require.NoError(t, err)
	assert.NotEqual(t, old.UID, renewed.UID)
	require.NoError(t, renewed.Delete(t.Context()))
	svc := old.Objects[1]
	require.Equal(t, "Service", svc.Kind)
	assert.False(t, deleted(t, env, svc), "the Service carries the lost release's UID")
	for _, ref := range renewed.Objects {
		assert.True(t, deleted(t, env, ref), "%s", ref)
	}
}

// A record edited by hand to list an object cube did not make: neither
// prune nor Delete removes it.
func TestAnEditedRecordNeverDeletesWhatCubeDidNotMake(t *testing.T) {
	c, env, ns := newClient(t)
	rel, err := c.Apply(t.Context(), webApp("shop", "", 1))
	require.NoError(t, err)
	foreign := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team-settings", Labels: map[string]string{cube.LabelRelease: "shop", cube.LabelManagedBy: cube.ManagedBy}},
	}
	require.NoError(t, env.Client.Create(t.Context(), foreign))
	var record corev1.ConfigMap
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "cube-release-shop"}, &record))
	record.Data["objects"] += "\nv1 ConfigMap " + ns + " team-settings\nv1 Namespace - " + ns
	require.NoError(t, env.Client.Update(t.Context(), &record))

	again, err := c.Apply(t.Context(), webApp("shop", "", 1))
	require.NoError(t, err)
	assert.Empty(t, again.Pruned, "objects without the release's UID are not pruned")
	require.NoError(t, rel.Delete(t.Context()))
	assert.False(t, deleted(t, env, cube.ObjectRef{GroupVersionKind: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Namespace: ns, Name: "team-settings"}))
	assert.False(t, deleted(t, env, nsRef(ns)))
}

// Two services embedding cube own their fields apart: the second changing
// the first's value is a conflict naming the first, unless forced.
func TestTwoFieldOwnersConflict(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	portalA := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.FieldOwner("portal-a"))
	portalB := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.FieldOwner("portal-b"))
	_, err := portalA.Apply(t.Context(), webApp("shop", "", 1))
	require.NoError(t, err)
	var d corev1.ConfigMap
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "shop-config"}, &d))
	managers := map[string]bool{}
	for _, mf := range d.ManagedFields {
		managers[mf.Manager] = true
	}
	assert.True(t, managers["portal-a:"+ns+"/shop"], "%v", managers)

	_, err = portalB.Apply(t.Context(), webApp("shop", "", 3))
	require.Error(t, err)
	assert.True(t, cube.IsConflict(err), "%v", err)
	assert.Contains(t, err.Error(), "portal-a:"+ns+"/shop")
	_, err = portalB.Apply(t.Context(), webApp("shop", "", 3), cube.Force)
	require.NoError(t, err)

	_, err = cube.New(env.Config, cube.FieldOwner("bad owner"))
	assert.ErrorContains(t, err, `field owner "bad owner"`)
	_, err = cube.New(env.Config, cube.FieldOwner(""))
	assert.Error(t, err)
}

// Applies racing on one name: of one kind, both land in one release; of
// two kinds, exactly one wins and the other is refused.
func TestApplyRacingApplyOnOneName(t *testing.T) {
	c, env, ns := newClient(t)
	other := cube.NewFromClient(env.Client, cube.Namespace(ns))
	var wg sync.WaitGroup
	rels := make([]*cube.Release, 2)
	errs := make([]error, 2)
	for i, cl := range []*cube.Client{c, other} {
		wg.Go(func() { rels[i], errs[i] = cl.Apply(t.Context(), webApp("shop", "", 1)) })
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	assert.Equal(t, rels[0].UID, rels[1].UID, "one release")

	for round := range 5 {
		name := fmt.Sprintf("race-%d", round)
		web := webApp(name, "", 1)
		job := train.PyTorch(name).Image("busybox:1.36").Command("true")
		wg.Go(func() { _, errs[0] = c.Apply(t.Context(), web) })
		wg.Go(func() { _, errs[1] = other.Apply(t.Context(), job) })
		wg.Wait()
		failed := 0
		for _, err := range errs {
			if err != nil {
				failed++
				assert.ErrorIs(t, err, cube.ErrNameTaken)
			}
		}
		assert.Equal(t, 1, failed, "round %d: %v", round, errors.Join(errs...))
		back, err := c.Release(t.Context(), ns, name)
		require.NoError(t, err)
		switch back.Kind {
		case "web":
			assert.NoError(t, errs[0])
		case "pytorchjob":
			assert.NoError(t, errs[1])
		default:
			t.Fatalf("round %d: release kind %q", round, back.Kind)
		}
	}
}

func TestClientRules(t *testing.T) {
	rules, err := cube.ClientRules(webApp("shop", "", 1))
	require.NoError(t, err)
	all := []string{"create", "delete", "get", "list", "patch", "watch"}
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: all},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: all},
	}, rules)

	// Without a ConfigMap of its own, a release still writes its record.
	rules, err = cube.ClientRules(deploymentOnly(webApp("shop", "", 1)))
	require.NoError(t, err)
	assert.Equal(t, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "delete", "get", "list", "patch"}}, rules[0])

	_, err = cube.ClientRules(webApp("shop", "", 1), nil)
	require.ErrorContains(t, err, "workload 1: workload is nil")
}

// deploymentOnly keeps the Deployment of w: the same release with its
// Service and ConfigMap dropped, which Apply prunes.
func deploymentOnly(w cube.Workload) cube.Workload {
	return cube.WorkloadFunc(func() ([]client.Object, error) {
		objs, err := w.Objects()
		return slices.DeleteFunc(objs, func(o client.Object) bool { _, ok := o.(*appsv1.Deployment); return !ok }), err
	})
}

// withIPCLock is w with IPC_LOCK added to its Deployment's container, which
// the baseline level refuses.
func withIPCLock(w cube.Workload) cube.Workload {
	return cube.WorkloadFunc(func() ([]client.Object, error) {
		objs, err := w.Objects()
		for _, o := range objs {
			if d, ok := o.(*appsv1.Deployment); ok {
				d.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
					Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK"}}}
			}
		}
		return objs, err
	})
}

// asUser binds user to a Role of exactly rules in ns and returns a
// Client authenticated as that user (impersonated by the admin
// credentials), once the RBAC authorizer knows the binding.
func asUser(t *testing.T, env *testenv.Env, ns, user string, rules []rbacv1.PolicyRule) *cube.Client {
	t.Helper()
	ctx := t.Context()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns}, Rules: rules}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	require.NoError(t, env.Client.Create(ctx, role))
	require.NoError(t, env.Client.Create(ctx, binding))
	// RBAC reads roles and bindings through informers: wait until the
	// authorizer grants one of the rules.
	var probe authorizationv1.ResourceAttributes
	for _, r := range rules {
		if len(r.Verbs) > 0 {
			probe = authorizationv1.ResourceAttributes{Namespace: ns, Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: r.Resources[0]}
			if r.Resources[0] == "namespaces" {
				probe.Name = ns
			}
			break
		}
	}
	require.Eventually(t, func() bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &probe}}
		return env.Client.Create(ctx, sar) == nil && sar.Status.Allowed
	}, 30*time.Second, 50*time.Millisecond, "the binding of %s reaches the authorizer", user)

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	cl, err := client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return cube.NewFromClient(cl, cube.Namespace(ns), cube.Clientset(cs))
}

// lifecycle does with c what a program running cube does with a release,
// and returns the steps that did not work, each with why. Every step
// also says what it proves the rules needed.
func lifecycle(ctx context.Context, t *testing.T, env *testenv.Env, c *cube.Client, ns, release string) []string {
	t.Helper()
	var failed []string
	fail := func(step string, err error) { failed = append(failed, fmt.Sprintf("%s: %v", step, err)) }

	// Apply the Deployment, Service and ConfigMap (create, patch) and the
	// record (configmaps create).
	rel, err := c.Apply(ctx, webApp(release, "", 1))
	if err != nil {
		return append(failed, fmt.Sprintf("apply: %v", err)) // nothing else can follow
	}
	// The Pod Security check reads the namespace (namespaces get).
	_, err = c.Apply(ctx, withIPCLock(webApp(release+"-rdma", "", 1)))
	if ps := (*cube.PodSecurityError)(nil); !errors.As(err, &ps) {
		fail("pod security check", fmt.Errorf("want a *PodSecurityError, got %v", err))
	}
	// The quota refused a pod of the Deployment, as its ReplicaSet's
	// controller reports it: Wait follows the events (list, watch) and
	// fails at once; Status lists them (events list).
	refused := quotaEvent(ns, release+"-5d9c7b8f4", "team", time.Now())
	require.NoError(t, env.Client.Create(ctx, refused))
	if _, err := rel.Wait(ctx, cube.Ready, cube.FailOnStuckPods, cube.Timeout(5*time.Second)); !errors.Is(err, cube.ErrFailed) || !strings.Contains(err.Error(), "exceeded quota team") {
		fail("wait for a refusal", fmt.Errorf("want the refused pod to fail the wait, got %v", err))
	}
	if st, err := rel.Status(ctx); err != nil {
		fail("status of a refusal", err)
	} else if len(st.Refusals) != 1 {
		fail("status of a refusal", fmt.Errorf("want the refusal, got %v", st.Refusals))
	}
	// The controller created the pod after all: the refusal is over.
	created := quotaEvent(ns, release+"-5d9c7b8f4", "team", time.Now().Add(2*time.Second))
	created.Name, created.Reason, created.Type, created.Message = created.Name+"-ok", "SuccessfulCreate", corev1.EventTypeNormal, "Created pod"
	require.NoError(t, env.Client.Create(ctx, created))

	// A pod of the release that cannot pull its image, as a ReplicaSet
	// and the kubelet would leave it.
	p := &corev1.Pod{
		ObjectMeta: cube.Identity{Kind: "web", Release: release, PartOf: "shop"}.ObjectMeta(release+"-pod", ns, nil, nil),
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
	}
	require.NoError(t, env.Client.Create(ctx, p))
	p.Status = pullBackOff
	require.NoError(t, env.Client.Status().Update(ctx, p))

	// Wait follows the objects (list, watch) and the pods (pods list,
	// watch): it fails at once on the stuck pod instead of timing out.
	if _, err := rel.Wait(ctx, cube.Ready, cube.FailOnStuckPods, cube.Timeout(5*time.Second)); !errors.Is(err, cube.ErrFailed) {
		fail("wait", fmt.Errorf("want the stuck pod to fail the wait, got %v", err))
	}
	// Status reads each object (get) and the pods (pods list).
	if st, err := rel.Status(ctx); err != nil {
		fail("status", err)
	} else if len(st.Pods) != 1 {
		fail("status", fmt.Errorf("want the stuck pod, got %v", st.Pods))
	}
	// Logs lists the pods and asks for their logs (pods/log get) of
	// containers that have started (it leaves out one still waiting, as
	// the stuck pod is): the pod runs now. The pod has no node, so the
	// server answers with an error; only a refusal counts.
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "web", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
	}}}
	require.NoError(t, env.Client.Status().Update(ctx, p))
	if r, err := rel.Logs(ctx); err == nil {
		r.Close()
	} else if apierrors.IsForbidden(err) {
		fail("logs", err)
	}
	// The release is found again from its record (configmaps get, list).
	if _, err := c.Release(ctx, ns, release); err != nil {
		fail("release", err)
	}
	if rels, err := c.Releases(ctx, ns); err != nil {
		fail("releases", err)
	} else if !slices.ContainsFunc(rels, func(r *cube.Release) bool { return r.Name == release }) {
		fail("releases", fmt.Errorf("%s is not listed", release))
	}
	// Applying the release without its Service and ConfigMap prunes them
	// (get, delete) and rewrites the record (configmaps patch).
	slim, err := c.Apply(ctx, deploymentOnly(webApp(release, "", 1)))
	switch {
	case err != nil:
		fail("prune", err)
	case len(slim.Pruned) != 2:
		fail("prune", fmt.Errorf("want the Service and the ConfigMap pruned, got %v", slim.Pruned))
	}
	// Delete removes the objects and the record (delete).
	if err := rel.Delete(ctx); err != nil {
		fail("delete", err)
	}
	return failed
}

// TestClientRulesAreEnoughAndEachIsNeeded runs a release's whole life as a
// user bound to a Role of exactly ClientRules: every step works. Then,
// for every verb of every rule, as a user whose Role lacks only that
// verb: some step fails, so the rules hold nothing cube does not use.
func TestClientRulesAreEnoughAndEachIsNeeded(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	var nsObj corev1.Namespace
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: ns}, &nsObj))
	if nsObj.Labels == nil {
		nsObj.Labels = map[string]string{}
	}
	nsObj.Labels[tenant.LabelPodSecurityEnforce] = string(tenant.PodSecurityBaseline)
	require.NoError(t, env.Client.Update(ctx, &nsObj))

	rules, err := cube.ClientRules(webApp("shop", "", 1))
	require.NoError(t, err)

	c := asUser(t, env, ns, "cube-runner", rules)
	require.Empty(t, lifecycle(ctx, t, env, c, ns, "full"), "every step works with exactly ClientRules")

	n := 0
	for i, r := range rules {
		for j, verb := range r.Verbs {
			n++
			less := make([]rbacv1.PolicyRule, len(rules))
			for k := range rules {
				less[k] = *rules[k].DeepCopy()
			}
			less[i].Verbs = slices.Delete(slices.Clone(r.Verbs), j, j+1)
			if len(less[i].Verbs) == 0 {
				less = slices.Delete(less, i, i+1)
			}
			what := verb + " " + r.Resources[0]
			t.Run(what, func(t *testing.T) {
				c := asUser(t, env, ns, fmt.Sprintf("cube-runner-%d", n), less)
				failed := lifecycle(ctx, t, env, c, ns, fmt.Sprintf("less-%d", n))
				assert.NotEmpty(t, failed, "without %s every step still works: the rule is not needed", what)
				t.Logf("without %s: %v", what, failed)
			})
		}
	}
}

// A namespace that warns on the restricted Pod Security level accepts a
// Deployment whose pods would violate it, with a warning: Release.Warnings
// carries the API server's words, once each, and a release in a namespace
// without the label has none. The handler the rest config had still sees
// every warning.
func TestApplyReportsTheAPIServersWarnings(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	warned, quiet := env.Namespace(t), env.Namespace(t)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{
		"pod-security.kubernetes.io/warn":         "restricted",
		"pod-security.kubernetes.io/warn-version": "latest",
	}}})
	require.NoError(t, err)
	_, err = env.Clientset.CoreV1().Namespaces().Patch(ctx, warned, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)

	cfg := rest.CopyConfig(env.Config)
	seen := &countingHandler{}
	cfg.WarningHandlerWithContext = seen
	c, err := cube.New(cfg)
	require.NoError(t, err)

	rel, err := c.Apply(ctx, webApp("shop", warned, 1))
	require.NoError(t, err)
	require.Len(t, rel.Warnings, 1, "%q", rel.Warnings)
	assert.Contains(t, rel.Warnings[0], `would violate PodSecurity "restricted:latest"`)
	assert.Contains(t, rel.Warnings[0], "allowPrivilegeEscalation != false")
	assert.Positive(t, seen.n.Load(), "the config's own handler still hears the warnings")

	again, err := c.Apply(ctx, webApp("shop", warned, 2))
	require.NoError(t, err)
	assert.Equal(t, rel.Warnings, again.Warnings, "every Apply reports what the server said to it")

	other, err := c.Apply(ctx, webApp("shop", quiet, 1))
	require.NoError(t, err)
	assert.Empty(t, other.Warnings)
}

type countingHandler struct{ n atomic.Int32 }

func (h *countingHandler) HandleWarningHeaderWithContext(_ context.Context, code int, _, _ string) {
	if code == 299 {
		h.n.Add(1)
	}
}

// Pod diagnostics against the real kube-apiserver (internal/testsupport/testenv). No
// kubelet or scheduler runs there: the test creates the pods a ReplicaSet
// would create, with the release's labels, and writes their status through
// the status subresource as the scheduler and the kubelet would.

// releasePod creates a pod of release shop, as the Deployment's ReplicaSet
// would, and returns it.
func releasePod(t *testing.T, env *testenv.Env, ns, name string) *corev1.Pod {
	t.Helper()
	id := cube.Identity{Kind: "web", Release: "shop", PartOf: "shop"}
	p := &corev1.Pod{
		ObjectMeta: id.ObjectMeta(name, ns, nil, nil),
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
	}
	require.NoError(t, env.Client.Create(t.Context(), p))
	return p
}

func setPodStatus(t *testing.T, env *testenv.Env, p *corev1.Pod, st corev1.PodStatus) {
	t.Helper()
	p.Status = st
	require.NoError(t, env.Client.Status().Update(t.Context(), p))
}

var unschedulable = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
	Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
	Message: "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.", LastTransitionTime: metav1.Now(),
}}}

var pullBackOff = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
	Name: "web", Image: "nginx:1.27",
	State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "nginx:1.27"`}},
}}}

func TestStatusAndWaitReportPodProblems(t *testing.T) {
	c, env, ns := newClient(t)
	ctx := t.Context()
	rel, err := c.Apply(ctx, webApp("shop", "", 2))
	require.NoError(t, err)
	a, b := releasePod(t, env, ns, "shop-a"), releasePod(t, env, ns, "shop-b")
	setPodStatus(t, env, a, unschedulable)

	st, err := rel.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, cube.InProgress, st.Phase)
	assert.Equal(t, []cube.PodProblem{{Pod: "shop-a", Reason: "Unschedulable", Message: "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}}, st.Pods)

	// Wait reports pod problems as they come, and without FailOnStuckPods
	// it keeps waiting through a stuck pod until the timeout.
	var seen [][]cube.PodProblem
	firstSeen := make(chan struct{})
	updated := make(chan error, 1)
	go func() {
		// Once Wait has reported the unschedulable pod, the other one
		// cannot pull its image.
		select {
		case <-firstSeen:
		case <-ctx.Done():
			updated <- ctx.Err()
			return
		}
		b.Status = pullBackOff
		updated <- env.Client.Status().Update(ctx, b)
	}()
	_, err = rel.Wait(ctx, cube.Ready, cube.Timeout(5*time.Second), cube.OnProgress(func(s cube.Status) {
		if len(seen) == 0 {
			close(firstSeen)
		}
		seen = append(seen, s.Pods)
	}))
	require.NoError(t, <-updated)
	require.ErrorIs(t, err, cube.ErrTimeout)
	require.NotEmpty(t, seen)
	assert.Len(t, seen[0], 1, "the first report knows the unschedulable pod")
	last := seen[len(seen)-1]
	require.Len(t, last, 2, "the stuck pod is reported once its status changes")
	assert.Equal(t, cube.PodProblem{Pod: "shop-b", Container: "web", Reason: "ImagePullBackOff", Message: `Back-off pulling image "nginx:1.27"`, Stuck: true}, last[1])
	var we *cube.WaitError
	require.ErrorAs(t, err, &we)
	assert.Len(t, we.Last.Pods, 2, "the timeout carries the pod problems")
	assert.Contains(t, err.Error(), "pod shop-a: Unschedulable")

	// With FailOnStuckPods the same release fails at once.
	start := time.Now()
	st, err = rel.Wait(ctx, cube.Ready, cube.Timeout(time.Minute), cube.FailOnStuckPods)
	require.ErrorIs(t, err, cube.ErrFailed)
	assert.Less(t, time.Since(start), 30*time.Second)
	assert.Equal(t, cube.Failed, st.Phase)
	assert.Equal(t, `pod shop-b container web: ImagePullBackOff: Back-off pulling image "nginx:1.27"`, st.Reason)

	// Deleting the stuck pod clears its problem.
	require.NoError(t, env.Client.Delete(ctx, b))
	st, err = rel.Status(ctx)
	require.NoError(t, err)
	assert.Len(t, st.Pods, 1)
}

// A caller who may read the release's objects but not its pods still gets
// their status and can wait on them: pods are diagnostics.
func TestPodProblemsNeedNoPodAccess(t *testing.T) {
	c, env, ns := newClient(t)
	ctx := t.Context()
	rel, err := c.Apply(ctx, webApp("shop", "", 1))
	require.NoError(t, err)
	setPodStatus(t, env, releasePod(t, env, ns, "shop-a"), unschedulable)

	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "release-reader", Namespace: ns},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"services", "configmaps"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "release-reader", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}},
	}
	require.NoError(t, env.Client.Create(ctx, role))
	require.NoError(t, env.Client.Create(ctx, binding))

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
	alice, err := client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	// RBAC reads roles through an informer: wait until alice may read.
	require.Eventually(t, func() bool {
		_, err := cube.NewFromClient(alice, cube.Namespace(ns)).Release(ctx, ns, "shop")
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)
	ac := cube.NewFromClient(alice, cube.Namespace(ns))
	arel, err := ac.Release(ctx, ns, rel.Name)
	require.NoError(t, err)

	st, err := arel.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, cube.InProgress, st.Phase)
	assert.Empty(t, st.Pods, "alice may not list pods")

	_, err = arel.Wait(ctx, cube.Ready, cube.Timeout(time.Second))
	require.ErrorIs(t, err, cube.ErrTimeout, "the forbidden pod watch does not end the wait")
}
