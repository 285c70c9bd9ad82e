package flows

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/cubestudio/cube/retry"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/train"
)

// BatchJob is a batch/v1 Job workload running command in busybox.
func BatchJob(name string, command ...string) cube.Workload {
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

// PyTorchJob is a PyTorchJob with a ConfigMap around it, as a training
// builder would make: the job reads the data written to the workspace and
// the learning-rate parameter. A pipeline that runs it is given
// train.Kinds(), whose Completion Argo waits on.
func PyTorchJob(name string) cube.Workload {
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

// LLMFlow is the pipeline of the issue: prepare → tokenize (fan-out over an
// output, four at a time) → train (a PyTorchJob) → evaluate and benchmark →
// publish when asked, and a notification on exit.
func LLMFlow() *pipeline.Pipeline { return LLMFlowNamed("llm-flow") }

// LLMFlowNamed is LLMFlow under another name.
func LLMFlowNamed(name string) *pipeline.Pipeline {
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
	sft := pipeline.Workload("train", PyTorchJob("llama-sft")).
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

// Ctr is a container step running true in busybox.
func Ctr(name string) *pipeline.ContainerStep {
	return pipeline.Container(name).Image("busybox").Command("true")
}

// FieldErrors returns the field errors of an aggregate, failing t when err
// is not one.
func FieldErrors(t testing.TB, err error) []*field.Error {
	t.Helper()
	if err == nil {
		t.Fatal("want an aggregate of field errors, got none")
	}
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		t.Fatalf("want an aggregate of field errors, got %T: %v", err, err)
	}
	var out []*field.Error
	for _, e := range agg.Errors() {
		var fe *field.Error
		if !errors.As(e, &fe) {
			t.Fatalf("want a field error, got %T: %v", e, e)
		}
		out = append(out, fe)
	}
	return out
}

// WantErr is a field error a test expects: its type, its path, and a
// substring of its detail (or of the bad value).
type WantErr struct {
	Type   field.ErrorType
	Path   string
	Detail string
}

func (w WantErr) matches(fe *field.Error) bool {
	return fe.Type == w.Type && fe.Field == w.Path &&
		(strings.Contains(fe.Detail, w.Detail) || strings.Contains(fmt.Sprint(fe.BadValue), w.Detail))
}

// RequireErrors fails t unless err holds exactly the wanted field errors.
func RequireErrors(t testing.TB, err error, want ...WantErr) {
	t.Helper()
	got := FieldErrors(t, err)
	for _, w := range want {
		found := false
		for _, fe := range got {
			if w.matches(fe) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("missing %s at %s (%q) in:\n%v", w.Type, w.Path, w.Detail, err)
		}
	}
	if len(got) != len(want) {
		t.Errorf("want %d errors, got %d:\n%v", len(want), len(got), err)
	}
}

// Want is the WantErr of type typ at path whose detail (or bad value)
// contains detail.
func Want(typ field.ErrorType, path, detail string) WantErr {
	return WantErr{Type: typ, Path: path, Detail: detail}
}

// Diamond is the pipeline the examples draw and run: prepare → train →
// evaluate and a fanned-out bench → deploy when asked, notify on exit.
func Diamond() *pipeline.Pipeline {
	prepare := pipeline.Container("prepare").Image("busybox").Command("sh", "-c", "echo /data > "+pipeline.OutputFile("data")).Outputs("data")
	train := pipeline.Container("train").Image("busybox").Command("sh", "-c", "echo "+prepare.Output("data")+"/model > "+pipeline.OutputFile("model")).Outputs("model")
	evaluate := pipeline.Container("evaluate").Image("busybox").Command("echo", train.Output("model"))
	bench := pipeline.Container("bench").Image("busybox").Command("echo", pipeline.ItemRef).ForEach("en", "zh").After(train)
	deploy := pipeline.Container("deploy").Image("busybox").Command("true").After(evaluate, bench).When(pipeline.ParamRef("deploy") + " == yes")
	notify := pipeline.Container("notify").Image("busybox").Command("echo", pipeline.PipelineStatus)
	return pipeline.New("llm").Param("deploy", "no").Step(prepare, train, evaluate, bench, deploy).OnExit(notify)
}
