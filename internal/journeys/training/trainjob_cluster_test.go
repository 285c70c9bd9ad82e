package training

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/journeys"
	"github.com/cubestudio/cube/train"
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

// A TrainJob on two nodes runs an all-reduce for real: cube installs a
// ClusterTrainingRuntime for torch on the test image, the Trainer turns
// the TrainJob into a JobSet, the JobSet controller makes its Jobs and
// headless Service, and both pods see world size 2 and the sum 1+2; the
// status is read through cube from the TrainJob.
func TestTrainJobAllReduce(t *testing.T) {
	c, cl, ns := journeys.NewClient(t)
	runtimeName := "cube-torch-cpu-" + ns
	rt := journeys.Apply(t, cl, train.ClusterRuntime(runtimeName, train.FrameworkTorch).Image(c.Images.Python))
	t.Cleanup(func() {
		if err := rt.Delete(t.Context()); err != nil {
			t.Errorf("delete runtime: %v", err)
		}
	})
	job := train.Trainer("ddp").
		Runtime(runtimeName, train.FrameworkTorch).
		Command("python3", "-c", allReduceV2).
		Nodes(2).
		CPU("500m").Memory("1Gi")
	rel := journeys.Apply(t, cl, job)
	st, err := rel.Wait(t.Context(), cube.Succeeded, cube.Timeout(journeys.WaitFor), cube.FailOnStuckPods, journeys.Progress(t))
	logs := journeys.LogsOf(t, rel)
	require.NoError(t, err, logs)
	assert.Equal(t, cube.Succeeded, st.Phase)
	assert.Contains(t, logs, "rank 0 world 2 sum 3.0")
	assert.Contains(t, logs, "rank 1 world 2 sum 3.0")
}
