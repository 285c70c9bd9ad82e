package train_test

// TrainJobs and ClusterTrainingRuntimes against the Kubeflow Trainer
// v2.3.0 CRDs (manifests/base/crds) on a real kube-apiserver. No Trainer
// runs here: the server's schema checks what cube renders (server-side
// apply refuses a field the schema does not declare), and the status is
// written through the status subresource as the Trainer writes it.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/train"
	trainer "github.com/cubestudio/cube/train/trainerv1alpha1"
)

// TestTrainerAppliedStrictly applies every TrainJob and runtime case on
// every hardware setup and checks that the server stored what was
// rendered.
func TestTrainerAppliedStrictly(t *testing.T) {
	c, env, ns := newClient(t)
	for _, bc := range trainerCases {
		for _, s := range setups {
			name := bc.name + "-" + s.name
			t.Run(name, func(t *testing.T) {
				w := bc.build(name, s)
				rel, err := c.Apply(t.Context(), w)
				require.NoError(t, err)
				want, err := w.Objects()
				require.NoError(t, err)
				require.Len(t, rel.Objects, 1)
				obj := want[0]
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
				key := client.ObjectKey{Name: obj.GetName()}
				if obj.GetObjectKind().GroupVersionKind().Kind == trainer.TrainJobKind {
					key.Namespace = ns
				}
				require.NoError(t, env.Client.Get(t.Context(), key, u))
				rendered, err := cube.ToUnstructured(obj)
				require.NoError(t, err)
				fuzzcorpus.AssertContains(t, "", rendered.Object["spec"], u.Object["spec"])
				if key.Namespace == "" {
					// Cluster-scoped: remove it, so that the next setup's
					// apply of the same name starts afresh.
					require.NoError(t, env.Client.Delete(t.Context(), u))
				}
			})
		}
	}
}

// The CRD's own validation refuses what cube refuses too: a TrainJob name
// that is not an RFC 1035 label reaches the server only when cube's
// checks are bypassed, and the server says why.
func TestTrainJobNameTheServerRefuses(t *testing.T) {
	_, env, ns := newClient(t)
	_, err := train.Trainer("Bad_Name").Build()
	require.ErrorContains(t, err, "metadata.name")
	j, err := train.Trainer("ok").Image("img").Build()
	require.NoError(t, err)
	j.Name, j.Namespace = "9starts-with-digit", ns
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(j)
	require.NoError(t, err)
	err = env.Client.Create(t.Context(), &unstructured.Unstructured{Object: u})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "RFC 1035")
}

// Release.Wait follows a TrainJob through the status the Trainer v2.3.0
// writes: Running from jobsStatus, then Complete copied from the JobSet
// (or Failed with its reason).
func TestWaitFollowsTheTrainer(t *testing.T) {
	c, env, ns := newClient(t)
	for _, end := range []struct {
		cond  string
		phase cube.Phase
	}{{trainer.TrainJobComplete, cube.Succeeded}, {trainer.TrainJobFailed, cube.Failed}} {
		t.Run(end.cond, func(t *testing.T) {
			ctx := t.Context()
			rel, err := c.Apply(ctx, train.Trainer("wait-"+map[string]string{"Complete": "ok", "Failed": "bad"}[end.cond]).Image("img"))
			require.NoError(t, err)
			st, err := rel.Status(ctx)
			require.NoError(t, err)
			assert.Equal(t, cube.InProgress, st.Phase)
			assert.Contains(t, st.Reason, "Pending")

			j := &trainer.TrainJob{}
			get := func() *unstructured.Unstructured {
				u := &unstructured.Unstructured{}
				u.SetAPIVersion(trainer.GroupVersion.String())
				u.SetKind(trainer.TrainJobKind)
				require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: rel.Objects[0].Name}, u))
				return u
			}
			writeStatus := func(s trainer.TrainJobStatus) {
				u := get()
				require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, j))
				j.Status = s
				obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(j)
				require.NoError(t, err)
				require.NoError(t, env.Client.Status().Update(ctx, &unstructured.Unstructured{Object: obj}))
			}
			one := int32(1)
			zero := int32(0)
			writeStatus(trainer.TrainJobStatus{JobsStatus: []trainer.JobStatus{{Name: "node", Active: &one, Ready: &one, Succeeded: &zero, Failed: &zero, Suspended: &zero}}})
			st, err = rel.Status(ctx)
			require.NoError(t, err)
			assert.Equal(t, cube.InProgress, st.Phase)
			assert.Contains(t, st.Reason, "Running")

			writeStatus(trainer.TrainJobStatus{Conditions: []metav1.Condition{{
				Type: end.cond, Status: metav1.ConditionTrue, Reason: "FromJobSet", Message: "jobset says so", LastTransitionTime: metav1.Now(),
			}}})
			final, err := rel.Wait(ctx, cube.Succeeded)
			if end.phase == cube.Failed {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, end.phase, final.Phase)
		})
	}
}
