package training

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/journeys"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/train"
	trainer "github.com/cubestudio/cube/train/trainerv1alpha1"
)

// allReduceV2 is allReduce for Kubeflow Trainer v2's torch runtime, which
// sets torchrun's variables instead of MASTER_ADDR, RANK and WORLD_SIZE:
// PET_MASTER_ADDR (<job>-node-0-0.<job>), PET_MASTER_PORT (29500),
// PET_NODE_RANK (the Job completion index) and PET_NNODES
// (pkg/runtime/framework/plugins/torch/torch.go, v2.3.0). With one process
// per node (numProcPerNode 1) the node's rank is the process's, so it
// initializes the group itself, as torchrun would: Debian's torch 1.13
// torchrun fails under Python 3.11 before it starts anything (see
// llm/launch_cluster_test.go).
const allReduceV2 = `
import os, torch, torch.distributed as dist
assert os.environ["PET_NPROC_PER_NODE"] == "1", os.environ["PET_NPROC_PER_NODE"]
dist.init_process_group("gloo", init_method="tcp://%s:%s" % (os.environ["PET_MASTER_ADDR"], os.environ["PET_MASTER_PORT"]),
                        rank=int(os.environ["PET_NODE_RANK"]), world_size=int(os.environ["PET_NNODES"]))
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
print(f"rank {rank} world {world} sum {t.item()}", flush=True)
dist.destroy_process_group()
`

// cpuRuntime installs a ClusterTrainingRuntime for torch on the test
// image, named after the namespace (runtimes are cluster-wide), and
// deletes it when the test ends.
func cpuRuntime(t *testing.T, c *testenv.Cluster, cl *cube.Client, ns string) string {
	t.Helper()
	name := "cube-torch-cpu-" + ns
	rt := journeys.Apply(t, cl, train.ClusterRuntime(name, train.FrameworkTorch).Image(c.Images.Python))
	t.Cleanup(func() {
		// t.Context() is done by the time cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rt.Delete(ctx); err != nil {
			t.Errorf("delete runtime: %v", err)
		}
	})
	return name
}

// get reads the object name of kind gvk into out, a Go type the test
// cluster's scheme does not hold.
func get(t *testing.T, c *testenv.Cluster, gvk schema.GroupVersionKind, ns, name string, out any) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	require.NoError(t, c.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, u))
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out))
}

// jobSetStatus reads the JobSet the Trainer made for the TrainJob name
// (of the same name) through cube's reader.
func jobSetStatus(t *testing.T, c *testenv.Cluster, ns, name string) cube.ObjectStatus {
	t.Helper()
	js := &jobsetv1alpha2.JobSet{}
	get(t, c, jobsetv1alpha2.GroupVersion.WithKind("JobSet"), ns, name, js)
	return train.JobSetStatus(js)
}

// trainJobStatus reads the TrainJob's own status through cube's reader.
func trainJobStatus(t *testing.T, c *testenv.Cluster, ns, name string) cube.ObjectStatus {
	t.Helper()
	j := &trainer.TrainJob{}
	get(t, c, trainer.GroupVersion.WithKind(trainer.TrainJobKind), ns, name, j)
	return train.TrainJobStatus(j)
}

// A TrainJob on two nodes runs an all-reduce for real: cube installs a
// ClusterTrainingRuntime for torch on the test image, the Trainer turns
// the TrainJob into a JobSet, the JobSet controller makes its Jobs and
// headless Service, and both pods see world size 2 and the sum 1+2; the
// release's status is read through cube from the TrainJob, and the
// JobSet's through cube's JobSet reader.
func TestTrainJobAllReduce(t *testing.T) {
	c, cl, ns := journeys.NewClient(t)
	runtime := cpuRuntime(t, c, cl, ns)
	job := train.Trainer("ddp").
		Runtime(runtime, train.FrameworkTorch).
		Command("python3", "-c", allReduceV2).
		Nodes(2).
		CPU("500m").Memory("1Gi")
	rel := journeys.Apply(t, cl, job)
	logs := journeys.Succeeds(t, rel)
	assert.Contains(t, logs, "rank 0 world 2 sum 3.0")
	assert.Contains(t, logs, "rank 1 world 2 sum 3.0")

	// The Trainer copies the JobSet's Completed condition
	// (AllJobsCompleted, pkg/constants of jobset v0.12.0) into the
	// TrainJob's Complete.
	for _, s := range []cube.ObjectStatus{trainJobStatus(t, c, ns, "ddp"), jobSetStatus(t, c, ns, "ddp")} {
		assert.Equal(t, cube.Succeeded, s.Phase)
		assert.Equal(t, "AllJobsCompleted", s.Reason)
		assert.Equal(t, "jobset completed successfully", s.Message)
	}
}

// A TrainJob that outlives its ActiveDeadline fails, and cube reads the
// Trainer's reason: the Trainer suspends the JobSet and sets Failed with
// reason DeadlineExceeded (pkg/controller/trainjob_controller.go, v2.3.0);
// Wait for Succeeded stops at once with cube.ErrFailed naming it.
func TestTrainJobDeadlineFails(t *testing.T) {
	c, cl, ns := journeys.NewClient(t)
	runtime := cpuRuntime(t, c, cl, ns)
	job := train.Trainer("late").
		Runtime(runtime, train.FrameworkTorch).
		Command("sleep", "600").
		Nodes(2).
		CPU("100m").Memory("64Mi").
		ActiveDeadline(15 * time.Second)
	rel := journeys.Apply(t, cl, job)
	st, err := rel.Wait(t.Context(), cube.Succeeded, cube.Timeout(journeys.WaitFor), journeys.Progress(t))
	require.ErrorIs(t, err, cube.ErrFailed)
	assert.Equal(t, cube.Failed, st.Phase)
	assert.Contains(t, err.Error(), trainer.TrainJobDeadlineExceededReason)
	s := trainJobStatus(t, c, ns, "late")
	assert.Equal(t, cube.Failed, s.Phase)
	assert.Equal(t, trainer.TrainJobDeadlineExceededReason, s.Reason)
	assert.NotEmpty(t, s.Message)
}

// The validating webhooks on TrainJobs run: a TrainJob naming a runtime
// that does not exist is refused at Apply with the reason, and no TrainJob
// is left behind. Two webhooks refuse it and the API server reports the
// first answer: Kueue v0.17.0's (vtrainjob.kb.io: "runtime '…' not
// found", pkg/controller/jobs/trainjob/trainjob_controller.go) or the
// Trainer v2.3.0's (validator.trainjob.trainer.kubeflow.org,
// pkg/runtime/core/clustertrainingruntime.go ValidateObjects).
func TestTrainJobOnMissingRuntimeIsRefused(t *testing.T) {
	c, cl, ns := journeys.NewClient(t)
	runtime := "no-such-runtime-" + ns
	_, err := cl.Apply(t.Context(), train.Trainer("orphan").Runtime(runtime, train.FrameworkTorch).Command("true"))
	require.Error(t, err)
	assert.Regexp(t, `admission webhook "(vtrainjob\.kb\.io" denied the request: runtime '`+runtime+`' not found|`+
		`validator\.trainjob\.trainer\.kubeflow\.org" denied the request: .*`+runtime+`.*specified clusterTrainingRuntime must be created before the TrainJob is created)`, err.Error())
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(trainer.GroupVersion.WithKind(trainer.TrainJobKind))
	err = c.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "orphan"}, u)
	assert.True(t, apierrors.IsNotFound(err), "the refused TrainJob exists: %v", err)
}
