package llm_test

// The launch path on the real one-node test cluster (internal/testsupport/testenv
// Cluster: kubelet, containerd, the training-operator).
//
// LLaMA-Factory cannot be installed here (no PyPI), so an executable
// named llamafactory-cli stands in for it: it does what LLaMA-Factory's
// launcher does with FORCE_TORCHRUN (src/llamafactory/launcher.py at
// v0.9.5), starting torchrun from NNODES, NODE_RANK, NPROC_PER_NODE,
// MASTER_ADDR and MASTER_PORT, and the script torchrun runs reads the
// generated train.yaml, checks every dataset is registered in
// dataset_info.json and the DeepSpeed JSON agrees with the training
// arguments, and runs a gloo all-reduce across the two pods.

import (
	"context"
	"strings"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/train"
)

const standinLauncher = `#!/usr/bin/env python3
import os, subprocess, sys
assert sys.argv[1] == "train", sys.argv
assert os.environ.get("FORCE_TORCHRUN") == "1"
args = ["--nnodes", os.environ["NNODES"], "--node_rank", os.environ["NODE_RANK"],
        "--nproc_per_node", os.environ["NPROC_PER_NODE"], "--master_addr", os.environ["MASTER_ADDR"],
        "--master_port", os.environ["MASTER_PORT"]]
print("launch", " ".join(args), flush=True)
# What torchrun would give its one process per node. (Debian's torch 1.13
# torchrun fails under Python 3.11 before it starts anything: to_map gets
# None for its redirects, torch/distributed/elastic/multiprocessing/api.py.)
assert os.environ["NPROC_PER_NODE"] == "1"
env = dict(os.environ, RANK=os.environ["NODE_RANK"], GROUP_RANK=os.environ["NODE_RANK"], WORLD_SIZE=os.environ["NNODES"], LOCAL_RANK="0", LOCAL_WORLD_SIZE="1")
sys.exit(subprocess.run([sys.executable, "/opt/standin/worker.py"] + sys.argv[2:], env=env).returncode)
`

const standinWorker = `import json, os, sys
import torch, torch.distributed as dist
cfg = {}
for line in open(sys.argv[1]):
    if ":" in line:
        k, v = line.split(":", 1)
        cfg[k.strip()] = v.strip()
info = json.load(open(os.path.join(cfg["dataset_dir"], "dataset_info.json")))
for name in cfg["dataset"].split(","):
    assert name in info, (name, info)
ds = json.load(open(cfg["deepspeed"]))
assert ds["train_micro_batch_size_per_gpu"] == int(cfg["per_device_train_batch_size"]), ds
assert ds["gradient_accumulation_steps"] == int(cfg["gradient_accumulation_steps"]), ds
os.makedirs(cfg["output_dir"], exist_ok=True)
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
print(f"stage {cfg['stage']} rank {rank} world {world} node_rank {os.environ['GROUP_RANK']} sum {t.item()} zero {ds['zero_optimization']['stage']}", flush=True)
dist.destroy_process_group()
`

// launchStandin applies the stand-in launcher's ConfigMap and the output
// claim in a fresh namespace and returns a client there.
func launchStandin(t *testing.T, c *testenv.Cluster) (*cube.Client, *corev1.ConfigMap) {
	t.Helper()
	ns := c.Namespace(t)
	cl, err := cube.New(c.Config, cube.Namespace(ns), cube.Kinds(train.Kinds()...))
	require.NoError(t, err)
	standin := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "llamafactory-standin", Labels: map[string]string{"cube.dev/release": "llamafactory-standin"}},
		Data:       map[string]string{"llamafactory-cli": standinLauncher, "worker.py": standinWorker},
	}
	claim := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: "models", Labels: map[string]string{"cube.dev/release": "llamafactory-standin"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	_, err = cl.Apply(t.Context(), cube.Objects(standin, claim))
	require.NoError(t, err)
	return cl, standin
}

// standinSFT is the fine-tune both launch paths run: two CPU pods on the
// test image, the stand-in launcher first on the PATH.
func standinSFT(c *testenv.Cluster, standin *corev1.ConfigMap) *llm.FineTune {
	mode := int32(0o755)
	sft := llm.SFT("launch", "Qwen/Qwen2.5-7B-Instruct").
		AddDataset(datasets.InstructionData("support", "hf://org/support", datasets.Alpaca)).
		Batch(2, 4).ZeRO(2).
		Output("pvc://models/launch")
	sft.Job().On(hardware.CPU).CPU("500m").Memory("1Gi").Nodes(2).
		Image(c.Images.Python).
		Env("PATH", "/opt/standin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin").
		AddVolume(corev1.Volume{Name: "standin", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: standin.Name}, DefaultMode: &mode}}}, "/opt/standin")
	return sft
}

// runStandin applies sft, waits for it to succeed and checks that both
// nodes launched torchrun with the whole environment and all-reduced.
func runStandin(t *testing.T, cl *cube.Client, sft *llm.FineTune) {
	t.Helper()
	ctx := t.Context()
	rel, err := cl.Apply(ctx, sft)
	require.NoError(t, err)
	st, err := rel.Wait(ctx, cube.Succeeded, cube.Timeout(5*time.Minute), cube.FailOnStuckPods)
	logs := func() string {
		r, lerr := rel.Logs(ctx)
		if lerr != nil {
			return lerr.Error()
		}
		defer r.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, rerr := r.Read(buf)
			b.Write(buf[:n])
			if rerr != nil {
				return b.String()
			}
		}
	}()
	require.NoError(t, err, logs)
	assert.Equal(t, cube.Succeeded, st.Phase)
	assert.Contains(t, logs, "launch --nnodes 2 --node_rank 0 --nproc_per_node 1")
	assert.Contains(t, logs, "launch --nnodes 2 --node_rank 1 --nproc_per_node 1")
	assert.Contains(t, logs, "stage sft rank 0 world 2 node_rank 0 sum 3.0 zero 2")
	assert.Contains(t, logs, "stage sft rank 1 world 2 node_rank 1 sum 3.0 zero 2")
}

func TestLaunchPathOnTheCluster(t *testing.T) {
	c := testenv.GetCluster(t)
	cl, standin := launchStandin(t, c)
	sft := standinSFT(c, standin)
	// Keep the Worker's pod once the Master succeeds, so that its log can
	// be read: with the operator's default (Running) a worker still
	// closing its process group is deleted with the job's success.
	sft.Job().CleanPodPolicy(kubeflowv1.CleanPodPolicyNone)
	runStandin(t, cl, sft)
}

// The same fine-tune as a Kubeflow Trainer v2 TrainJob on a torch
// ClusterTrainingRuntime of the test image: the Trainer's PET_ variables
// reach the launcher as the names it reads, and the ConfigMaps and the
// claim are mounted through the runtime patch. (A JobSet keeps the pods
// of its finished Jobs, so both nodes' logs stay.)
func TestLaunchPathOnTrainer(t *testing.T) {
	c := testenv.GetCluster(t)
	cl, standin := launchStandin(t, c)
	runtime := "cube-llm-torch-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	rt, err := cl.Apply(t.Context(), train.ClusterRuntime(runtime, train.FrameworkTorch).Image(c.Images.Python))
	require.NoError(t, err)
	t.Cleanup(func() {
		// t.Context() is done by the time cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rt.Delete(ctx); err != nil {
			t.Errorf("delete runtime: %v", err)
		}
	})
	runStandin(t, cl, standinSFT(c, standin).Runtime(runtime, train.FrameworkTorch))
}
