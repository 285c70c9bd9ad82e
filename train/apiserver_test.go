package train_test

// These tests run against a real kube-apiserver with the training-operator,
// KubeRay and Volcano CRDs installed (internal/testsupport/testenv). No operator runs:
// the lifecycle tests write status through the status subresource as each
// operator would (cubetest.MarkObject).

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/train"
)

func newClient(t testing.TB) (*cube.Client, *testenv.Env, string) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	return cube.NewFromClient(env.Client, cube.Namespace(ns), cube.Clientset(env.Clientset), cube.Kinds(train.Kinds()...)), env, ns
}

// TestAppliedStrictly applies every builder on every hardware setup with
// server-side apply and strict field validation, and checks that what the
// server stored is what was rendered.
func TestAppliedStrictly(t *testing.T) {
	c, env, ns := newClient(t)
	for _, bc := range builderCases {
		for _, s := range setups {
			name := bc.name + "-" + s.name
			t.Run(name, func(t *testing.T) {
				w := bc.build(name, s)
				rel, err := c.Apply(t.Context(), w)
				require.NoError(t, err)
				want, err := w.Objects()
				require.NoError(t, err)
				require.Len(t, rel.Objects, len(want))
				for _, obj := range want {
					u := &unstructured.Unstructured{}
					u.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
					require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: obj.GetName()}, u))
					rendered, err := cube.ToUnstructured(obj)
					require.NoError(t, err)
					if u.GetKind() == "Job" {
						dropTaskTemplateMetadata(rendered, u)
					}
					// Every rendered field is stored as rendered; the server
					// may add defaults (port protocols, suspend: false).
					fuzzcorpus.AssertContains(t, "", rendered.Object["spec"], u.Object["spec"])
					fuzzcorpus.AssertContains(t, "", rendered.Object["data"], u.Object["data"])
					labels := maps.Clone(obj.GetLabels())
					labels[cube.LabelReleaseUID] = rel.UID
					assert.Equal(t, labels, u.GetLabels(), "the rendered labels and the release's UID")
				}
				assert.Equal(t, primaryKind[bc.name], rel.Objects[len(rel.Objects)-1].Kind)
			})
		}
	}
}

// TestWaitFollowsTheOperators drives every kind through Running to
// Succeeded, and another release through Running to Failed, writing the
// status each operator writes, and checks what Release.Wait reports.
func TestWaitFollowsTheOperators(t *testing.T) {
	c, env, _ := newClient(t)
	cpu := setups[2]
	for _, bc := range builderCases {
		t.Run(bc.name, func(t *testing.T) {
			ctx := t.Context()
			ok, err := c.Apply(ctx, bc.build(bc.name+"-ok", cpu))
			require.NoError(t, err)
			bad, err := c.Apply(ctx, bc.build(bc.name+"-bad", cpu))
			require.NoError(t, err)
			job := ok.Objects[len(ok.Objects)-1]
			badJob := bad.Objects[len(bad.Objects)-1]

			st, err := ok.Status(ctx)
			require.NoError(t, err)
			assert.Equal(t, cube.InProgress, st.Phase, "a job the operator has not seen is in progress")

			require.NoError(t, cubetest.MarkObject(ctx, env.Client, job, cube.InProgress, "", ""))
			st, err = ok.Status(ctx)
			require.NoError(t, err)
			assert.Equal(t, cube.InProgress, st.Phase)
			assert.Equal(t, "Running", st.Objects[len(st.Objects)-1].Reason)

			seen := make(chan cube.Status, 16)
			done := make(chan error, 1)
			go func() {
				_, err := ok.Wait(ctx, cube.Succeeded, cube.Timeout(30*time.Second), cube.OnProgress(func(s cube.Status) { seen <- s }))
				done <- err
			}()
			first := <-seen
			assert.Equal(t, cube.InProgress, first.Phase)
			require.NoError(t, cubetest.MarkObject(ctx, env.Client, job, cube.Succeeded, "", "all replicas finished"))
			require.NoError(t, <-done)
			st, err = ok.Status(ctx)
			require.NoError(t, err)
			assert.Equal(t, cube.Succeeded, st.Phase)

			require.NoError(t, cubetest.MarkObject(ctx, env.Client, badJob, cube.InProgress, "", ""))
			require.NoError(t, cubetest.MarkObject(ctx, env.Client, badJob, cube.Failed, "OOMKilled", "worker 1 ran out of memory"))
			st, err = bad.Wait(ctx, cube.Succeeded, cube.Timeout(30*time.Second))
			require.Error(t, err)
			assert.True(t, errors.Is(err, cube.ErrFailed), "%v", err)
			assert.Equal(t, cube.Failed, st.Phase)
			last := st.Objects[len(st.Objects)-1]
			assert.Equal(t, cube.Failed, last.Phase)
			assert.Contains(t, last.String(), "worker 1 ran out of memory")
		})
	}
}

// dropTaskTemplateMetadata removes the pod-template metadata of a Volcano
// Job's tasks on both sides: testenv generates Volcano's CRDs with plain
// `controller-gen crd`, whose schema for an embedded ObjectMeta has no
// properties, so the API server prunes the template's labels and
// annotations. Volcano's own CRDs are generated with
// generateEmbeddedObjectMeta=true and keep them. The pod-template metadata
// of Volcano Jobs is checked in the golden files instead.
func dropTaskTemplateMetadata(objs ...*unstructured.Unstructured) {
	for _, u := range objs {
		tasks, _, _ := unstructured.NestedSlice(u.Object, "spec", "tasks")
		for _, task := range tasks {
			if tmpl, ok := task.(map[string]any)["template"].(map[string]any); ok {
				delete(tmpl, "metadata")
			}
		}
		_ = unstructured.SetNestedSlice(u.Object, tasks, "spec", "tasks")
	}
}
