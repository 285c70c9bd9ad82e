package pipeline_test

import (
	"testing"
	"time"

	"github.com/cubestudio/cube/retry"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/train"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// batchJob is a batch/v1 Job workload running command in busybox.
func batchJob(name string, command ...string) cube.Workload {
	id := cube.Identity{Kind: "job", Release: name}
	return cube.Objects(&batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: id.ObjectMeta(name, "", nil, nil),
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: id.Labels()},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "busybox:1.36", Command: command}},
				},
			},
		},
	})
}

// pytorchJob is a PyTorchJob with a ConfigMap around it, as a training
// builder would make: the job reads the data written to the workspace and
// the learning-rate parameter. A pipeline that runs it is given
// train.Kinds(), whose Completion Argo waits on.
func pytorchJob(name string) cube.Workload {
	id := cube.Identity{Kind: "pytorchjob", Release: name}
	container := corev1.Container{
		Name:    kubeflowv1.PyTorchJobDefaultContainerName,
		Image:   "nvcr.io/nvidia/pytorch:24.08-py3",
		Command: []string{"torchrun", "--nproc-per-node=8", "train.py"},
		Args:    []string{"--data", pipeline.WorkspaceDir + "/tokens", "--lr", pipeline.ParamRef("lr")},
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name + "-config"}}}},
	}
	replica := func(n int32) *kubeflowv1.ReplicaSpec {
		return &kubeflowv1.ReplicaSpec{
			Replicas:      ptr.To(n),
			RestartPolicy: kubeflowv1.RestartPolicyOnFailure,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: id.Labels()},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{container}},
			},
		}
	}
	return cube.Objects(
		&corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: id.ObjectMeta(name+"-config", "", nil, nil),
			Data:       map[string]string{"NCCL_DEBUG": "WARN"},
		},
		&kubeflowv1.PyTorchJob{
			TypeMeta:   metav1.TypeMeta{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob"},
			ObjectMeta: id.ObjectMeta(name, "", nil, nil),
			Spec: kubeflowv1.PyTorchJobSpec{
				RunPolicy: kubeflowv1.RunPolicy{CleanPodPolicy: ptr.To(kubeflowv1.CleanPodPolicyRunning)},
				PyTorchReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
					kubeflowv1.PyTorchJobReplicaTypeMaster: replica(1),
					kubeflowv1.PyTorchJobReplicaTypeWorker: replica(3),
				},
			},
		},
	)
}

// llmFlow is the pipeline of the issue: prepare → tokenize (fan-out over an
// output, four at a time) → train (a PyTorchJob) → evaluate and benchmark →
// publish when asked, and a notification on exit.
func llmFlow() *pipeline.Pipeline { return llmFlowNamed("llm-flow") }

// llmFlowNamed is llmFlow under another name.
func llmFlowNamed(name string) *pipeline.Pipeline {
	prepare := pipeline.Container("prepare").Image("python:3.12").
		Command("python", "prepare.py", "--out", pipeline.WorkspaceDir+"/data").
		Args("--shards-file", pipeline.OutputFile("shards"), "--rows-file", pipeline.OutputFile("rows")).
		Env("HF_HOME", pipeline.WorkspaceDir+"/hf").
		EnvFromSecret("HF_TOKEN", pod.SecretKeyRef{Name: "hf", Key: "token"}).
		CPU("2").Memory("8Gi").
		Outputs("shards", "rows")
	tokenize := pipeline.Container("tokenize").Image("python:3.12").
		Command("python", "tokenize.py", "--shard", pipeline.ItemRef, "--out", pipeline.WorkspaceDir+"/tokens").
		ForEachIn(prepare.Output("shards")).Parallelism(4).
		Retry(retry.Policy{Limit: 3})
	sft := pipeline.Workload("train", pytorchJob("llama-sft")).
		After(tokenize).
		Retry(retry.Policy{Limit: 2, Backoff: 30 * time.Second, Factor: 2, MaxBackoff: 5 * time.Minute}).RetryOn(pipeline.OnError).
		ActiveDeadline(6 * time.Hour)
	evaluate := pipeline.Container("evaluate").Image("python:3.12").
		On(hardware.L4).Accelerators(1).
		Command("python", "eval.py").
		Args("--rows", prepare.Output("rows"), "--lr", pipeline.ParamRef("lr"), "--score-file", pipeline.OutputFile("score")).
		After(sft).
		ActiveDeadline(90 * time.Second).
		Outputs("score")
	benchmark := pipeline.Container("benchmark").Image("python:3.12").
		Command("python", "bench.py", "--lang", pipeline.ItemRef).
		ForEach("en", "zh", "ja").
		After(sft)
	publish := pipeline.Container("publish").Image("curlimages/curl:8.10.1").
		Command("sh", "-c", "curl -fsS -X POST \"$REGISTRY\" -d score="+evaluate.Output("score")).
		Env("REGISTRY", "http://registry.ml:8080/models").
		When(pipeline.ParamRef("publish") + " == yes")
	notify := pipeline.Container("notify").Image("curlimages/curl:8.10.1").
		Command("sh", "-c", "echo run "+pipeline.PipelineName+" ended: "+pipeline.PipelineStatus)
	return pipeline.New(name).Namespace("ml").Label("team", "nlp").
		Kinds(train.Kinds()...).
		Param("lr", "3e-4").Param("publish", "no").
		Step(prepare, tokenize, sft, evaluate, benchmark, publish).
		Workspace(pipeline.Workspace{Size: "50Gi", StorageClass: "standard", AccessMode: corev1.ReadWriteMany}).
		Parallelism(8).
		TTLAfterFinished(24 * time.Hour).
		PodGC(pipeline.PodGCOnPodSuccess).
		ServiceAccount("pipeline-runner").
		OnExit(notify)
}
