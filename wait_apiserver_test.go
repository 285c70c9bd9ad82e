package cube_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
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
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
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
