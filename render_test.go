package cube_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/golden"
)

func TestRenderGolden(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, cube.Render(&buf, webApp("shop", "team-a", 2)))
	golden.Assert(t, "render.golden", buf.Bytes())

	out := buf.String()
	assert.NotContains(t, out, "creationTimestamp")
	assert.NotContains(t, out, "status:")
	// Every document decodes and names its kind, as kubectl needs.
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	var kinds []string
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if err != nil {
			break
		}
		assert.NotEmpty(t, obj["apiVersion"])
		kinds = append(kinds, obj["kind"].(string))
	}
	assert.Equal(t, []string{"ConfigMap", "Service", "Deployment"}, kinds)

	var again bytes.Buffer
	require.NoError(t, cube.Render(&again, webApp("shop", "team-a", 2)))
	assert.Equal(t, buf.String(), again.String(), "deterministic")
}

func TestRenderErrors(t *testing.T) {
	failing := cube.WorkloadFunc(func() ([]client.Object, error) { return nil, errors.New("spec.image: Required value") })
	noKind := cube.Objects(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}})
	err := cube.Render(&bytes.Buffer{}, failing, nil, noKind)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.image: Required value")
	assert.Contains(t, err.Error(), "render workload 1: workload is nil")
	assert.Contains(t, err.Error(), `object "x" of type *v1.ConfigMap has no apiVersion/kind set`)
}

func TestObjectsCopies(t *testing.T) {
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "v"}}
	w := cube.Objects(cm)
	cm.Data["k"] = "changed"
	first, err := w.Objects()
	require.NoError(t, err)
	first[0].(*corev1.ConfigMap).Data["k"] = "mutated"
	second, err := w.Objects()
	require.NoError(t, err)
	assert.Equal(t, "v", second[0].(*corev1.ConfigMap).Data["k"])
}

func TestSummarize(t *testing.T) {
	ready := cube.ObjectStatus{Phase: cube.Ready}
	done := cube.ObjectStatus{Phase: cube.Succeeded}
	run := cube.ObjectStatus{Phase: cube.InProgress, Reason: "Running"}
	fail := cube.ObjectStatus{Phase: cube.Failed, Reason: "BackoffLimitExceeded"}
	assert.Equal(t, cube.Ready, cube.Summarize([]cube.ObjectStatus{ready, ready}).Phase)
	assert.Equal(t, cube.Succeeded, cube.Summarize([]cube.ObjectStatus{ready, done}).Phase)
	assert.Equal(t, cube.InProgress, cube.Summarize([]cube.ObjectStatus{done, run}).Phase)
	assert.Equal(t, cube.Failed, cube.Summarize([]cube.ObjectStatus{run, fail, done}).Phase)
	assert.Equal(t, cube.Ready, cube.Summarize(nil).Phase)
}

func BenchmarkRender1000Objects(b *testing.B) {
	w := cube.Objects(deployments("bench", "team-a", 1000)...)
	b.ReportAllocs()
	for b.Loop() {
		if err := cube.Render(&bytes.Buffer{}, w); err != nil {
			b.Fatal(err)
		}
	}
}
