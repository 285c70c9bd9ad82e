package training

import (
	"context"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/journeys"
	"github.com/cubestudio/cube/train"
)

// allReduce is a torch.distributed program over gloo on CPU: every rank
// contributes rank+1, and every rank prints the sum. The training-operator
// sets MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK.
const allReduce = `
import os, torch, torch.distributed as dist
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
print(f"rank {rank} world {world} sum {t.item()}", flush=True)
dist.destroy_process_group()
`

// A PyTorchJob with a Master and a Worker runs an all-reduce for real: the
// operator wires the two pods together through cluster DNS and both see
// world size 2 and the sum 1+2.
func TestPyTorchDDPAllReduce(t *testing.T) {
	c, cl, _ := journeys.NewClient(t)
	job := train.PyTorch("ddp").
		Image(c.Images.Python).
		Command("python3", "-c", allReduce).
		Workers(1).
		CPU("500m").Memory("1Gi").
		// Keep the Worker's pod for its log: by default the operator
		// deletes pods still running when the Master succeeds.
		CleanPodPolicy(kubeflowv1.CleanPodPolicyNone)
	rel := journeys.Apply(t, cl, job)
	st, err := rel.Wait(t.Context(), cube.Succeeded, cube.Timeout(journeys.WaitFor), cube.FailOnStuckPods, journeys.Progress(t))
	logs := journeys.LogsOf(t, rel)
	require.NoError(t, err, logs)
	assert.Equal(t, cube.Succeeded, st.Phase)
	assert.Contains(t, logs, "rank 0 world 2 sum 3.0")
	assert.Contains(t, logs, "rank 1 world 2 sum 3.0")
}

// The same program as a PyTorchJob of one pod (a Master and no Workers):
// the operator still sets the rendezvous variables, for a world of one.
func TestPyTorchOnePod(t *testing.T) {
	c, cl, _ := journeys.NewClient(t)
	job := train.PyTorch("solo").
		Image(c.Images.Python).
		Command("python3", "-c", allReduce).
		Workers(0).
		CPU("500m").Memory("1Gi")
	rel := journeys.Apply(t, cl, job)
	st, err := rel.Wait(t.Context(), cube.Succeeded, cube.Timeout(journeys.WaitFor), cube.FailOnStuckPods, journeys.Progress(t))
	logs := journeys.LogsOf(t, rel)
	require.NoError(t, err, logs)
	assert.Equal(t, cube.Succeeded, st.Phase)
	assert.Contains(t, logs, "rank 0 world 1 sum 1.0")
}

// After the launcher of an MPIJob ends, its workers (which only sleep for
// mpirun to exec into them) must not linger holding their resources.
func TestMPIJobAllReduce(t *testing.T) {
	c, cl, ns := journeys.NewClient(t)
	script := `from mpi4py import MPI
c = MPI.COMM_WORLD
s = c.allreduce(c.Get_rank() + 1)
print(f"mpi rank {c.Get_rank()} size {c.Get_size()} sum {s}", flush=True)`
	job := train.MPI("mpi").
		Image(c.Images.Python).
		// The program; the launcher wraps it in mpirun over the workers.
		Command("python3", "-c", script).
		MPIRunArgs("--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "eth0").
		Workers(2).
		CPU("250m").Memory("512Mi")
	rel := journeys.Apply(t, cl, job)
	st, err := rel.Wait(t.Context(), cube.Succeeded, cube.Timeout(journeys.WaitFor), cube.FailOnStuckPods, journeys.Progress(t))
	logs := journeys.LogsOf(t, rel)
	require.NoError(t, err, logs)
	assert.Equal(t, cube.Succeeded, st.Phase)
	assert.Contains(t, logs, "mpi rank 0 size 2 sum 3")
	assert.Contains(t, logs, "mpi rank 1 size 2 sum 3")

	// cube's cleanPodPolicy Running: the operator deletes the workers (they
	// sleep as PID 1 and ignore SIGTERM, so they go at the end of their
	// grace period); under the operator's default None they would run on.
	var left []string
	err = wait.PollUntilContextTimeout(t.Context(), time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "training.kubeflow.org/replica-type=worker"})
		if err != nil {
			return false, err
		}
		left = left[:0]
		for _, p := range pods.Items {
			left = append(left, p.Name+" "+string(p.Status.Phase))
		}
		return len(left) == 0, nil
	})
	assert.NoError(t, err, "workers still there after the launcher ended: %v", left)
}
