package market_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/market"
)

const crashWriterEnv = "CUBE_MARKET_CRASH_WRITER"

// runCrashWriter registers versions of "crash" until the process is
// killed, or stops after a thousand: in the file store at target, or, when
// target is "kube:" and JSON, in a Kubernetes store on that API server.
func runCrashWriter(target string) int {
	s, err := crashStore(target)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	reg := market.NewRegistry(s)
	for range 1000 {
		_, err := reg.Register(context.Background(), sampleVersion("crash"))
		// Three writers registering flat out on a loaded machine: one can
		// lose every race of a registration, which Register reports as
		// ErrConflict for its caller to retry, as a caller would.
		for tries := 0; errors.Is(err, market.ErrConflict) && tries < 10; tries++ {
			time.Sleep(time.Duration(rand.IntN(20)+1) * time.Millisecond)
			_, err = reg.Register(context.Background(), sampleVersion("crash"))
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// kubeTarget is what a writer process needs to reach the test API server.
type kubeTarget struct {
	Host                      string
	CAData, CertData, KeyData []byte
	BearerToken               string
	Namespace                 string
}

func crashStore(target string) (market.Store, error) {
	raw, ok := strings.CutPrefix(target, "kube:")
	if !ok {
		return market.OpenFileStore(target)
	}
	var k kubeTarget
	if err := json.Unmarshal([]byte(raw), &k); err != nil {
		return nil, err
	}
	c, err := client.New(&rest.Config{Host: k.Host, BearerToken: k.BearerToken, TLSClientConfig: rest.TLSClientConfig{
		CAData: k.CAData, CertData: k.CertData, KeyData: k.KeyData,
	}}, client.Options{})
	if err != nil {
		return nil, err
	}
	return market.NewKubernetesStore(c, k.Namespace)
}

// configData returns the credentials of config as bytes, reading the
// files it names.
func configData(t *testing.T, config *rest.Config, ns string) string {
	read := func(data []byte, file string) []byte {
		if len(data) > 0 || file == "" {
			return data
		}
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		return b
	}
	tls := config.TLSClientConfig
	raw, err := json.Marshal(kubeTarget{
		Host: config.Host, BearerToken: config.BearerToken, Namespace: ns,
		CAData: read(tls.CAData, tls.CAFile), CertData: read(tls.CertData, tls.CertFile), KeyData: read(tls.KeyData, tls.KeyFile),
	})
	require.NoError(t, err)
	return "kube:" + string(raw)
}

func startWriter(t *testing.T, path string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashWriterEnv+"="+path)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	return cmd
}

// TestFileStoreSurvivesKilledWriters shares one file between this process
// and two writer processes, kills both with SIGKILL mid-stream, and checks
// the file: it opens, every version decodes, the numbers run 1..n without
// a gap or a repeat, and the next registration takes n+1.
func TestFileStoreSurvivesKilledWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.db")
	s, err := market.OpenFileStore(path)
	require.NoError(t, err)
	testKilledWriters(t, s, path)
}

// TestKubernetesStoreSurvivesKilledWriters is the same on the test API
// server: writer processes killed mid-request leave every version whole
// and the numbers without gaps.
func TestKubernetesStoreSurvivesKilledWriters(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	s, err := market.NewKubernetesStore(env.Client, ns)
	require.NoError(t, err)
	testKilledWriters(t, s, configData(t, env.Config, ns))
}

func testKilledWriters(t *testing.T, s market.Store, target string) {
	reg := market.NewRegistry(s)
	writers := []*exec.Cmd{startWriter(t, target), startWriter(t, target)}
	deadline := time.Now().Add(60 * time.Second)
	mine := 0
	for {
		// This process writes too, between the other two, until they have
		// written at least 40 versions between them.
		_, err := reg.Register(t.Context(), sampleVersion("crash"))
		require.NoError(t, err)
		mine++
		vs, err := s.List(t.Context(), market.Filter{Model: "crash"})
		require.NoError(t, err)
		if len(vs)-mine >= 40 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, w := range writers {
		_ = w.Process.Kill()
		_ = w.Wait()
	}
	vs, err := s.List(t.Context(), market.Filter{Model: "crash"})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(vs)-mine, 40, "the writer processes wrote before they were killed")
	for i, v := range vs {
		require.Equal(t, i+1, v.Number, "numbers run without gaps")
		assert.Equal(t, sampleVersion("crash").Artifact, v.Artifact)
	}
	next, err := reg.Register(t.Context(), sampleVersion("crash"))
	require.NoError(t, err)
	assert.Equal(t, len(vs)+1, next.Number)
}
