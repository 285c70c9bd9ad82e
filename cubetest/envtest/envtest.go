package envtest

import (
	"context"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

// Env is the running kube-apiserver of a test binary, with every CRD cube
// renders for installed. Get returns it.
type Env struct {
	// Config holds admin credentials (a user in system:masters) for the
	// API server; give it to the code under test (cube.New(env.Config),
	// client-go, controller-runtime).
	Config *rest.Config
	// Client is cube.New(Config) with no options.
	Client *cube.Client
	// Kube is a controller-runtime client whose scheme knows the built-in
	// kinds and every kind cube builds (training-operator, Volcano, Argo
	// Workflows, LeaderWorkerSet, KubeRay, Gateway API), for reading back
	// what the code under test created.
	Kube client.WithWatch

	env *testenv.Env
}

var shared struct {
	once sync.Once
	env  *Env
	err  error
}

// Main runs a package's tests, building first what the cache lacks (see
// the package documentation), and stops the API server after them. Call it
// from TestMain:
//
//	func TestMain(m *testing.M) { envtest.Main(m) }
func Main(m *testing.M) { testenv.Main(m) }

// Get returns the test binary's environment, starting it on first use
// (a few seconds with a warm cache). A failure to start fails tb; it never
// skips. The package's TestMain must call Main.
func Get(tb testing.TB) *Env {
	tb.Helper()
	e := testenv.Get(tb)
	shared.once.Do(func() {
		var c *cube.Client
		c, shared.err = cube.New(e.Config)
		shared.env = &Env{Config: e.Config, Client: c, Kube: e.Client, env: e}
	})
	if shared.err != nil {
		tb.Fatalf("envtest: %v", shared.err)
	}
	return shared.env
}

// Namespace creates a fresh namespace for tb, named after the test, and
// deletes it with everything in it when tb ends.
func (e *Env) Namespace(tb testing.TB) string {
	tb.Helper()
	return e.env.Namespace(tb)
}

// CreateStrict creates obj with fieldValidation=Strict, so that a field the
// server's schema does not know is an error instead of being dropped; on
// success obj holds what the server stored.
func (e *Env) CreateStrict(ctx context.Context, obj client.Object) error {
	return e.env.CreateStrict(ctx, obj)
}

// ApplyStrict server-side applies obj as fieldOwner (forcing ownership,
// always validated strictly); on success obj holds what the server stored.
func (e *Env) ApplyStrict(ctx context.Context, obj client.Object, fieldOwner string) error {
	return e.env.ApplyStrict(ctx, obj, fieldOwner)
}

// Prepare builds what the environment needs and the cache lacks, and
// returns the cache directory; cmd/prebuild runs it.
func Prepare(ctx context.Context) (string, error) { return testenv.Prepare(ctx) }
