package testenv

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Env is a running kube-apiserver backed by its own etcd, with the
// third-party CRDs installed. No controllers run: nothing schedules pods,
// reconciles workloads, creates service accounts or fills quota status.
type Env struct {
	Config    *rest.Config         // admin credentials (group system:masters)
	Client    client.WithWatch     // controller-runtime client with Scheme below
	Clientset kubernetes.Interface // client-go clientset
	// Scheme holds the client-go types, apiextensions v1, training-operator
	// kubeflow.org/v1, Volcano batch v1alpha1 and scheduling v1beta1, Argo
	// Workflows v1alpha1, LeaderWorkerSet v1, KubeRay v1 and Gateway API v1.
	Scheme *runtime.Scheme

	// StartupTime is how long the first Get took to build what was missing
	// and start the environment.
	StartupTime time.Duration

	dir     string // temporary directory: data, credentials, logs
	servers *servers
	// controllers is set on the test cluster, where the namespace
	// controller and the kubelet do their work.
	controllers bool
	dynamic     dynamic.Interface
	// restartMu orders StopAPIServer and StartAPIServer.
	restartMu sync.Mutex

	namespacedOnce      sync.Once
	namespacedResources []schema.GroupVersionResource
	namespacedErr       error
}

var shared struct {
	mainCalled atomic.Bool
	once       sync.Once
	env        *Env
	err        error
}

// Main runs a package's tests and then stops the shared environment if one
// was started. Call it from TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
func Main(m *testing.M) {
	// A test binary started again as the test cluster's daemon runs it
	// and exits here (see GetCluster).
	runDaemonIfAsked()
	shared.mainCalled.Store(true)
	// Build what the cache lacks before the tests start, so that a cold
	// build does not count against the tests' own -timeout alarm, which
	// starts with m.Run. The go command still kills a test binary that runs
	// longer than -timeout plus one minute in all, so a cold build of more
	// than that needs cmd/prebuild or a longer -timeout. With a warm cache
	// this only checks the files.
	if _, err := Prepare(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if shared.env != nil {
		shared.env.stop()
	}
	os.Exit(code)
}

// Get returns the test binary's shared environment, starting it on first
// use. The first use on a machine also builds kube-apiserver, etcd and the
// CRDs into the user cache (see the package documentation). A failure to
// start fails tb; it never skips. The package's TestMain must call Main,
// which stops the environment after the tests.
func Get(tb testing.TB) *Env {
	tb.Helper()
	if !shared.mainCalled.Load() {
		tb.Fatal("testenv: the package's TestMain must call testenv.Main(m), which stops the API server after the tests")
	}
	shared.once.Do(func() {
		began := time.Now()
		shared.env, shared.err = start(tb.Context())
		if shared.env != nil {
			shared.env.StartupTime = time.Since(began)
		}
	})
	if shared.err != nil {
		tb.Fatalf("testenv: %v", shared.err)
	}
	return shared.env
}

// Prepare builds whatever the environment needs and the cache lacks, and
// returns the cache directory. Get does the same on first use; Prepare lets
// a script build ahead, outside go test's timeout (see cmd/prebuild).
func Prepare(ctx context.Context) (string, error) {
	l, err := newLayout(ctx)
	if err != nil {
		return "", err
	}
	if err := l.ensure(ctx); err != nil {
		return "", err
	}
	return l.artifacts.dir, nil
}

// start builds what is missing and starts etcd, from the template with the
// CRDs installed, and kube-apiserver.
func start(ctx context.Context) (_ *Env, err error) {
	l, err := newLayout(ctx)
	if err != nil {
		return nil, err
	}
	if err := l.ensure(ctx); err != nil {
		return nil, err
	}
	index, err := readIndex(l.artifacts.crdIndex())
	if err != nil {
		return nil, err
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "cube-testenv-")
	if err != nil {
		return nil, fmt.Errorf("create temp dir: %w", err)
	}
	e := &Env{Scheme: scheme, dir: dir}
	defer func() {
		if err != nil {
			e.stop()
		}
	}()
	if e.servers, err = launchServers(ctx, l.artifacts, dir, l.artifacts.etcdTemplate, apiServerOptions{}); err != nil {
		return nil, err
	}
	if err := e.connect(ctx, e.servers.config, index); err != nil {
		return nil, e.servers.apiServer.failure(fmt.Errorf("%w (the cached etcd template may be broken: delete %s)", err, l.artifacts.dir))
	}
	return e, nil
}

// connect makes e's clients for config and waits until every CRD of index
// is served.
func (e *Env) connect(ctx context.Context, config *rest.Config, index []servedCRD) error {
	e.Config = config
	// The CLI tools' default warning handler goes through klog; this one
	// prints server warnings (deprecations, mostly) plainly.
	e.Config.WarningHandlerWithContext = warningPrinter{}
	var err error
	if e.Clientset, err = kubernetes.NewForConfig(e.Config); err != nil {
		return fmt.Errorf("create clientset: %w", err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, crdInstallTimeout)
	defer cancel()
	if err := waitServed(waitCtx, e.Clientset.Discovery(), index); err != nil {
		return err
	}
	// The namespace cleanup deletes every kind in a namespace; warnings
	// such as "v1 Endpoints is deprecated" are noise there.
	quiet := rest.CopyConfig(e.Config)
	quiet.WarningHandlerWithContext = rest.NoWarnings{}
	if e.dynamic, err = dynamic.NewForConfig(quiet); err != nil {
		return fmt.Errorf("create dynamic client: %w", err)
	}
	// A logger of its own keeps controller-runtime from complaining, with a
	// stack trace, that no global logger was set.
	e.Client, err = client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme, Log: stderrLogger()})
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	return nil
}

// stderrLogger logs controller-runtime client messages to stderr. (A
// client given logr.Discard, which counts as no logger, would fall back to
// the global one.)
func stderrLogger() logr.Logger {
	return funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, "testenv:", prefix, args) }, funcr.Options{})
}

// warningPrinter prints API server warnings to stderr.
type warningPrinter struct{}

func (warningPrinter) HandleWarningHeaderWithContext(_ context.Context, code int, _ string, message string) {
	if code == 299 && message != "" {
		fmt.Fprintln(os.Stderr, "testenv: API server warning:", message)
	}
}

// stop kills the processes and removes the temporary directory.
func (e *Env) stop() {
	if e.servers != nil {
		e.servers.kill()
	}
	_ = os.RemoveAll(e.dir)
}

// Namespace creates a fresh namespace for tb, named after the test and
// unique, and deletes it in tb.Cleanup. With no namespace controller
// running, the cleanup does its work: it deletes every namespaced object in
// the namespace (objects held by finalizers stay, as no controller would
// release them) and then finalizes the namespace so that it is gone.
func (e *Env) Namespace(tb testing.TB) string {
	tb.Helper()
	base := namespaceBase(tb.Name())
	for attempt := 0; ; attempt++ {
		// rand.Text is base32: upper-case letters and digits 2-7.
		name := base + "-" + strings.ToLower(rand.Text()[:5])
		ns := &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
		}
		_, err := e.Clientset.CoreV1().Namespaces().Create(tb.Context(), ns, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) && attempt < 5 {
			continue
		}
		if err != nil {
			tb.Fatalf("testenv: create namespace %s: %v", name, err)
		}
		tb.Cleanup(func() {
			// tb.Context is already canceled when cleanups run.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := e.deleteNamespace(ctx, name); err != nil {
				tb.Errorf("testenv: %v", err)
			}
		})
		e.awaitWebhooksSee(tb, name)
		return name
	}
}

// awaitWebhooksSee waits, for up to 30 seconds, until the admission
// webhooks admit a Pod in the new namespace name without saying that the
// namespace does not exist. In the test cluster Kueue's pod webhook
// (mpod.kb.io) looks namespaces up in its informer's cache, and for a few
// milliseconds after the namespace is created it denies every Pod there
// ("Namespace ... not found"); a CI run failed that way once. The probe is
// a dry run, so nothing is created; any other answer ends the wait (on an
// API server without those webhooks, the first).
func (e *Env) awaitWebhooksSee(tb testing.TB, name string) {
	tb.Helper()
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "testenv-probe-"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "probe"}}},
	}
	unseen := fmt.Sprintf("Namespace %q not found", name)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := e.Clientset.CoreV1().Pods(name).Create(tb.Context(), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || !strings.Contains(err.Error(), "admission webhook") || !strings.Contains(err.Error(), unseen) || time.Now().After(deadline) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// maxNamespaceBase leaves room for "-" and a five-character suffix within
// the 63 characters of a DNS-1123 label.
const maxNamespaceBase = 63 - 6

// namespaceBase turns a test name into the start of a DNS-1123 label:
// lowercase letters, digits and single dashes, starting and ending with a
// letter or digit.
func namespaceBase(testName string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(testName) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	base := b.String()
	if len(base) > maxNamespaceBase {
		base = base[:maxNamespaceBase]
	}
	base = strings.TrimRight(base, "-")
	if base == "" {
		base = "test"
	}
	return base
}

// deleteNamespace does what the namespace controller would: delete the
// namespace, delete its contents, then drop the kubernetes finalizer. On the
// test cluster the namespace controller does it, once the pods are gone
// without a grace period (a test's pods need no clean shutdown).
func (e *Env) deleteNamespace(ctx context.Context, name string) error {
	namespaces := e.Clientset.CoreV1().Namespaces()
	if e.controllers {
		pods := e.Clientset.CoreV1().Pods(name)
		if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pods in namespace %s: %w", name, err)
		}
		if err := namespaces.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete namespace %s: %w", name, err)
		}
		return e.waitNamespaceGone(ctx, name)
	}
	if err := namespaces.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	resources, err := e.namespacedDeletable()
	if err != nil {
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, 8)
	)
	for _, gvr := range resources {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			err := e.dynamic.Resource(gvr).Namespace(name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
				mu.Lock()
				errs = append(errs, fmt.Errorf("delete %s in namespace %s: %w", gvr.GroupResource(), name, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}

	ns, err := namespaces.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("finalize namespace %s: %w", name, err)
	}
	ns.Spec.Finalizers = nil
	if _, err := namespaces.Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("finalize namespace %s: %w", name, err)
	}
	return e.waitNamespaceGone(ctx, name)
}

func (e *Env) waitNamespaceGone(ctx context.Context, name string) error {
	err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := e.Clientset.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("wait for namespace %s to go: %w", name, err)
	}
	return nil
}

// namespacedDeletable lists, once, the preferred version of every
// namespaced resource that supports deletecollection.
func (e *Env) namespacedDeletable() ([]schema.GroupVersionResource, error) {
	e.namespacedOnce.Do(func() {
		lists, err := e.Clientset.Discovery().ServerPreferredNamespacedResources()
		if err != nil {
			e.namespacedErr = fmt.Errorf("discover namespaced resources: %w", err)
			return
		}
		for _, list := range lists {
			gv, err := schema.ParseGroupVersion(list.GroupVersion)
			if err != nil {
				e.namespacedErr = fmt.Errorf("discover namespaced resources: %w", err)
				return
			}
			for _, r := range list.APIResources {
				if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "deletecollection") {
					continue
				}
				e.namespacedResources = append(e.namespacedResources, gv.WithResource(r.Name))
			}
		}
	})
	return e.namespacedResources, e.namespacedErr
}

// CreateStrict creates obj with fieldValidation=Strict, so that a field the
// server's schema does not know is an error rather than silently dropped.
// On success obj holds what the server stored. The error is returned, not
// reported to a test.
func (e *Env) CreateStrict(ctx context.Context, obj client.Object) error {
	if err := e.Client.Create(ctx, obj, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
		return fmt.Errorf("create %s: %w", e.describe(obj), err)
	}
	return nil
}

// ApplyStrict server-side applies obj as fieldOwner, forcing ownership, and
// on success replaces obj's contents with what the server stored. Apply
// requests are always validated strictly. A typed obj is applied with every
// field its JSON form carries, zero values included, which is what a
// client applying typed objects sends.
func (e *Env) ApplyStrict(ctx context.Context, obj client.Object, fieldOwner string) error {
	gvk, err := apiutil.GVKForObject(obj, e.Scheme)
	if err != nil {
		return fmt.Errorf("apply %s: %w", e.describe(obj), err)
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("apply %s: %w", e.describe(obj), err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	u.SetManagedFields(nil) // an apply request may not carry managed fields
	if err := e.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s: %w", e.describe(obj), err)
	}
	if typed, ok := obj.(*unstructured.Unstructured); ok {
		typed.Object = u.Object
		return nil
	}
	// Decode into a fresh value so that fields the server dropped do not
	// survive from the caller's object.
	fresh := reflect.New(reflect.TypeOf(obj).Elem())
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, fresh.Interface()); err != nil {
		return fmt.Errorf("apply %s: decode response: %w", e.describe(obj), err)
	}
	reflect.ValueOf(obj).Elem().Set(fresh.Elem())
	return nil
}

// describe names obj for an error: kind and namespace/name.
func (e *Env) describe(obj client.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		if gvk, err := apiutil.GVKForObject(obj, e.Scheme); err == nil {
			kind = gvk.Kind
		}
	}
	name := obj.GetName()
	if name == "" {
		name = obj.GetGenerateName() + "*"
	}
	if ns := obj.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return strings.ToLower(kind) + " " + name
}
