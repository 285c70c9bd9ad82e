package cube_test

import (
	"testing"

	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/retry"

	"github.com/stretchr/testify/assert"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/train"
)

// A builder declared as a zero value instead of made by its constructor
// takes a whole chain of pod settings without a nil dereference (each
// setter of a zero value returns a fresh zero value), and rendering it says
// which constructor to use. (A nil *T cannot be helped for the settings T
// inherits from pod.Builder: Go dereferences the nil pointer to reach the
// embedded field before the method runs.)
func TestZeroValueBuildersChainAndReport(t *testing.T) {
	var (
		pt  train.PyTorchJob
		mpi train.MPIJob
		ds  train.DeepSpeedJob
		ray train.RayJob
		svc serve.Service
		nb  notebook.Notebook
		st  pipeline.ContainerStep
	)
	cases := []struct {
		name  string
		chain func()
		w     cube.Workload
		want  string
	}{
		{"PyTorchJob", func() {
			pt.Image("x").Namespace("a").CPU("1").Memory("1Gi").On(hardware.H100).Accelerators(1).Env("A", "b").TTLAfterFinished(0).Workers(2)
		}, &pt, "train.PyTorch"},
		{"MPIJob", func() { mpi.Image("x").Namespace("a").CPU("1").Retry(retry.Policy{Limit: 1}).Workers(2) }, &mpi, "train.MPI"},
		{"DeepSpeedJob", func() { ds.Image("x").CPU("1").Accelerators(2).Workers(1) }, &ds, "DeepSpeed"},
		{"RayJob", func() { ray.Image("x").CPU("1") }, &ray, "Ray"},
		{"serve.Service", func() { svc.Image("x").Namespace("a").CPU("1").On(hardware.T4).Accelerators(1) }, &svc, "serve.VLLM"},
		{"Notebook", func() { nb.Image("x").Namespace("a").CPU("1").Accelerators(1) }, &nb, "Jupyter"},
		{"ContainerStep", func() {
			st.Image("x").CPU("1").Retry(retry.Policy{Limit: 1}).When("1 > 0").Outputs("o")
		}, argo.Workflow(pipeline.New("p").Step(&st)), "Container"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.NotPanics(t, c.chain)
			var err error
			assert.NotPanics(t, func() { _, err = c.w.Objects() })
			if assert.Error(t, err) {
				assert.Contains(t, err.Error(), c.want, "the error names the constructor")
			}
		})
	}
}
