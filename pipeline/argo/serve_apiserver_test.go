package argo_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/pipeline/argo"
)

// The serving pipeline's Workflow, RBAC and Service apply strictly to the
// real API server with Argo's CRDs, and the Deployment its serving step
// applies is one the server accepts (strict field validation), as Argo's
// executor would apply it.
func TestAPIServerAcceptsServeStep(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	w := argo.Workflow(servePipeline(ns, "busybox")).ExecutorRBAC()
	rel, err := cube.NewFromClient(env.Client, cube.Namespace(ns)).Apply(ctx, w)
	require.NoError(t, err, "strict server-side apply")
	require.NotEmpty(t, rel.Objects)
	wf, err := w.Build()
	require.NoError(t, err)
	tm := template(t, wf, "serve")
	var content map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(tm.Resource.Manifest), &content))
	dep := &unstructured.Unstructured{Object: content}
	require.NoError(t, env.Client.Create(ctx, dep, client.FieldValidation(metav1.FieldValidationStrict)))
	require.Equal(t, ns, dep.GetNamespace(), "the manifest names the pipeline's namespace")
}
