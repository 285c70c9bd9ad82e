package cubetest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/kinds"
)

// fuzzKinds are the kinds SetStatus plays a controller for, plus one it
// does not know.
var fuzzKinds = [][2]string{
	{"apps/v1", "Deployment"}, {"apps/v1", "StatefulSet"}, {"v1", "Pod"}, {"batch/v1", "Job"},
	{"kubeflow.org/v1", "PyTorchJob"}, {"kubeflow.org/v1beta1", "Experiment"},
	{"batch.volcano.sh/v1alpha1", "Job"}, {"ray.io/v1", "RayJob"}, {"argoproj.io/v1alpha1", "Workflow"},
	{"leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"}, {"argoproj.io/v1alpha1", "CronWorkflow"}, {"example.com/v1", "Unknown"},
}

// FuzzSetStatus writes any phase, reason and message a test may give on
// every kind: nothing panics, a phase no controller writes is refused, and
// what SetStatus writes cube reads back as that phase.
func FuzzSetStatus(f *testing.F) {
	f.Add(uint8(0), "Ready", "", "")
	f.Add(uint8(4), "Failed", "Boom", "the controller gave up")
	f.Add(uint8(9), "Succeeded", "", "ünï\x00")
	f.Add(uint8(10), "Done", "x", "y")
	f.Fuzz(func(t *testing.T, kind uint8, phase, reason, message string) {
		k := fuzzKinds[int(kind)%len(fuzzKinds)]
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(k[0])
		u.SetKind(k[1])
		u.SetName("x")
		var err error
		require.NotPanics(t, func() { err = cubetest.SetStatus(u, cube.Phase(phase), reason, message) })
		switch cube.Phase(phase) {
		case cube.InProgress, cube.Ready, cube.Succeeded, cube.Failed:
		default:
			require.Error(t, err, "phase %q", phase)
			return
		}
		if err != nil {
			return // a kind or phase SetStatus cannot play, said as an error
		}
		var st cube.ObjectStatus
		require.NotPanics(t, func() { st = cube.ReadStatus(u, kinds.All()...) })
		if k[1] != "Unknown" {
			assert.NotEmpty(t, st.Phase)
			assert.NotEqual(t, cube.Unknown, st.Phase, "kinds.All() reads every kind SetStatus plays: %v", st)
		}
	})
}
