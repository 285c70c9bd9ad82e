package training

import (
	"context"
	"fmt"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/journeys"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/train"
)

// lateAllReduce sleeps before it joins the group, so that a fault can be
// injected while every pod runs and before the ranks depend on each other.
const lateAllReduce = `
import os, time, torch, torch.distributed as dist
time.sleep(int(os.environ.get("DELAY", "20")))
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
print(f"rank {rank} world {world} sum {t.item()}", flush=True)
dist.destroy_process_group()
`

// faultJob applies a two-pod PyTorchJob running lateAllReduce and returns
// its release once both pods run.
func faultJob(t *testing.T, name string) (*testenv.Cluster, *cube.Release, string) {
	t.Helper()
	c, cl, ns := journeys.NewClient(t)
	job := train.PyTorch(name).
		Image(c.Images.Python).
		Command("python3", "-c", lateAllReduce).
		Workers(1).
		CPU("250m").Memory("768Mi").
		// Keep every pod after the job ends: the journeys inspect them, and
		// by default the operator deletes pods still running when the
		// Master succeeds (the kubelet-restart journey lost a worker so).
		CleanPodPolicy(kubeflowv1.CleanPodPolicyNone)
	rel := journeys.Apply(t, cl, job)
	waitPodsRunning(t, c, ns, name, 2)
	return c, rel, ns
}

// waitPodsRunning waits until n pods of the PyTorchJob run.
func waitPodsRunning(t *testing.T, c *testenv.Cluster, ns, job string, n int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "training.kubeflow.org/job-name=" + job})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		return running == n, nil
	})
	require.NoError(t, err, "%d pods of %s running", n, job)
}

// succeeds waits for the job's release to succeed, checks that the
// operator recorded the same outcome, and returns the release's logs.
func succeeds(t *testing.T, c *testenv.Cluster, rel *cube.Release, ns, name string) string {
	t.Helper()
	st, err := rel.Wait(t.Context(), cube.Succeeded, cube.Timeout(journeys.WaitFor), journeys.Progress(t))
	logs := journeys.LogsOf(t, rel)
	require.NoError(t, err, logs)
	assert.Equal(t, cube.Succeeded, st.Phase)
	assert.Equal(t, kubeflowv1.JobSucceeded, finalCondition(t, c, ns, name))
	return logs
}

// finalCondition is the terminal condition the training-operator stored on
// the job: what the operator decided.
func finalCondition(t *testing.T, c *testenv.Cluster, ns, name string) kubeflowv1.JobConditionType {
	t.Helper()
	var job kubeflowv1.PyTorchJob
	require.NoError(t, c.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, &job))
	for _, cond := range job.Status.Conditions {
		if cond.Status == corev1.ConditionTrue && (cond.Type == kubeflowv1.JobSucceeded || cond.Type == kubeflowv1.JobFailed) {
			return cond.Type
		}
	}
	t.Fatalf("PyTorchJob %s has no terminal condition: %+v", name, job.Status.Conditions)
	return ""
}

// The training-operator crashes while a job's pods run and comes back (as
// its Deployment would restart it): the new operator adopts the running
// job, the job completes, and Wait, which was watching all along, reports
// Succeeded, as the operator recorded it.
func TestTrainingOperatorRestartMidJob(t *testing.T) {
	c, rel, ns := faultJob(t, "op-crash")
	require.NoError(t, c.Restart(t.Context(), "training-operator"))
	logs := succeeds(t, c, rel, ns, "op-crash")
	// The master's line proves the all-reduce with the worker; the worker's
	// pod may already be gone when its job succeeds.
	assert.Contains(t, logs, "rank 0 world 2 sum 3.0")
}

// The kubelet crashes and restarts while a job's pods run: the containers
// keep running under containerd, the restarted kubelet takes them over
// without restarting them, and the job succeeds.
func TestKubeletRestartWhilePodsRun(t *testing.T) {
	c, rel, ns := faultJob(t, "kubelet-crash")
	require.NoError(t, c.Restart(t.Context(), "kubelet"))
	succeeds(t, c, rel, ns, "kubelet-crash")
	pods, err := c.Clientset.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "training.kubeflow.org/job-name=kubelet-crash"})
	require.NoError(t, err)
	require.Len(t, pods.Items, 2)
	for _, p := range pods.Items {
		for _, s := range p.Status.ContainerStatuses {
			assert.Zero(t, s.RestartCount, "pod %s container %s restarted across the kubelet restart", p.Name, s.Name)
		}
	}
}

// A worker pod is deleted while the job runs (a lost node): the
// training-operator replaces it, the replacement joins the master, and
// Wait reports the outcome the operator recorded. (The first run of this
// journey found Release.Logs failing for the whole release because the
// replacement of a pod deleted gracefully was still initializing when the
// job ended; Logs now leaves such pods out.)
func TestWorkerPodDeleted(t *testing.T) {
	c, rel, ns := faultJob(t, "lost-worker")
	worker := fmt.Sprintf("%s-worker-0", "lost-worker")
	before, err := c.Clientset.CoreV1().Pods(ns).Get(t.Context(), worker, metav1.GetOptions{})
	require.NoError(t, err)
	// Killed at once, as on a lost node: with a grace period the old
	// worker (python as PID 1 ignores SIGTERM) would finish the
	// all-reduce with the master before it goes.
	now := int64(0)
	require.NoError(t, c.Clientset.CoreV1().Pods(ns).Delete(t.Context(), worker, metav1.DeleteOptions{GracePeriodSeconds: &now}))

	logs := succeeds(t, c, rel, ns, "lost-worker")
	after, err := c.Clientset.CoreV1().Pods(ns).Get(t.Context(), worker, metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, before.UID, after.UID, "the operator replaced the deleted worker")
	// The master's line proves the all-reduce with the worker; the worker's
	// pod may already be gone when its job succeeds.
	assert.Contains(t, logs, "rank 0 world 2 sum 3.0")
}

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
	logs := journeys.Succeeds(t, rel)
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
	logs := journeys.Succeeds(t, rel)
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
	logs := journeys.Succeeds(t, rel)
	assert.Contains(t, logs, "mpi rank 0 size 2 sum 3")
	assert.Contains(t, logs, "mpi rank 1 size 2 sum 3")

	// cube's cleanPodPolicy Running: the operator deletes the workers (they
	// sleep as PID 1 and ignore SIGTERM, so they go at the end of their
	// grace period); under the operator's default None they would run on.
	var left []string
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
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
