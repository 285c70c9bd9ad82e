package serve_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/cubestudio/cube/pod"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/serve"
)

func thousandServices() []cube.Workload {
	ws := make([]cube.Workload, 1000)
	for i := range ws {
		ws[i] = serve.VLLM(fmt.Sprintf("qwen-%d", i), "Qwen/Qwen2.5-7B-Instruct").
			On(hardware.H100).Accelerators(1).MaxModelLen(8192).
			HFToken(pod.SecretKeyRef{Name: "hf-token", Key: "token"}).ModelCache("model-cache").
			Replicas(2)
	}
	return ws
}

// handBuilt is the baseline of the benchmarks: the Deployment, Service and
// PodDisruptionBudget of one of thousandServices written directly with the
// upstream types, the way a team without cube would, with no validation,
// no hardware profile and no engine knowledge.
func handBuilt(name string) []client.Object {
	labels := map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/component": "server"}
	probe := func(threshold int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8000)}},
			PeriodSeconds:    10,
			FailureThreshold: threshold,
		}
	}
	gpu := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	dep := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
					Tolerations:  []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
					Containers: []corev1.Container{{
						Name:  "vllm",
						Image: serve.DefaultVLLMImage,
						Args:  []string{"--model", "Qwen/Qwen2.5-7B-Instruct", "--host", "0.0.0.0", "--port", "8000", "--max-model-len", "8192"},
						Env: []corev1.EnvVar{
							{Name: "HF_HOME", Value: serve.CachePath + "/huggingface"},
							{Name: "HF_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
								LocalObjectReference: corev1.LocalObjectReference{Name: "hf-token"}, Key: "token"}}},
						},
						Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}},
						Resources:      corev1.ResourceRequirements{Requests: gpu, Limits: gpu},
						VolumeMounts:   []corev1.VolumeMount{{Name: "model-cache", MountPath: serve.CachePath}, {Name: "shm", MountPath: "/dev/shm"}},
						StartupProbe:   probe(180),
						ReadinessProbe: probe(3),
						LivenessProbe:  probe(5),
					}},
					Volumes: []corev1.Volume{
						{Name: "model-cache", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "model-cache"}}},
						{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
					},
				},
			},
		},
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name + "-api", Labels: labels},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{
			Name: "http", Port: 8000, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}}},
	}
	pdb := &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	return []client.Object{dep, svc, pdb}
}

func handBuiltThousand() [][]client.Object {
	out := make([][]client.Object, 1000)
	for i := range out {
		out[i] = handBuilt(fmt.Sprintf("qwen-%d", i))
	}
	return out
}

// BenchmarkRender1000VLLM renders 1,000 vLLM services (Deployment, Service
// and PodDisruptionBudget each) to YAML per operation; the baseline builds
// the same objects by hand and marshals them with sigs.k8s.io/yaml.
func BenchmarkRender1000VLLM(b *testing.B) {
	b.Run("cube", func(b *testing.B) {
		ws := thousandServices()
		b.ReportAllocs()
		for b.Loop() {
			if err := cube.Render(io.Discard, ws...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, objs := range handBuiltThousand() {
				for _, o := range objs {
					out, err := yaml.Marshal(o)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Discard.Write(append(out, "---\n"...))
				}
			}
		}
	})
}

// BenchmarkObjects1000VLLM builds the typed objects of 1,000 vLLM services
// per operation, without YAML; the baseline writes the same objects by
// hand with the upstream types.
func BenchmarkObjects1000VLLM(b *testing.B) {
	b.Run("cube", func(b *testing.B) {
		ws := thousandServices()
		b.ReportAllocs()
		for b.Loop() {
			for _, w := range ws {
				if _, err := w.Objects(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(handBuiltThousand()) != 1000 {
				b.Fatal("short")
			}
		}
	})
}

// BenchmarkObjectsAuto1000VLLM sizes 1,000 services with the planner; the
// baseline renders the same services with the layout Auto chose written
// out (Accelerators, Nodes, TensorParallel, PipelineParallel), which Objects only
// checks against one plan at that tensor parallelism.
func BenchmarkObjectsAuto1000VLLM(b *testing.B) {
	auto := func(i int) *serve.Service {
		return serve.VLLM(fmt.Sprintf("llama-%d", i), "meta-llama/Llama-3.1-70B-Instruct").On(hardware.L4).Auto(serve.ContextLength(32768))
	}
	plan, err := serve.AutoPlan(auto(0))
	if err != nil {
		b.Fatal(err)
	}
	for _, bench := range []struct {
		name string
		svc  func(i int) *serve.Service
	}{
		{"cube", auto},
		{"baseline", func(i int) *serve.Service {
			return serve.VLLM(fmt.Sprintf("llama-%d", i), "meta-llama/Llama-3.1-70B-Instruct").On(hardware.L4).
				Accelerators(plan.AcceleratorsPerNode).Nodes(plan.Nodes).
				TensorParallel(plan.TensorParallel).PipelineParallel(plan.PipelineParallel).
				MaxModelLen(plan.ContextLength).MemoryUtilization(plan.MemoryUtilization)
		}},
	} {
		b.Run(bench.name, func(b *testing.B) {
			ws := make([]cube.Workload, 1000)
			for i := range ws {
				ws[i] = bench.svc(i)
			}
			b.ReportAllocs()
			for b.Loop() {
				for _, w := range ws {
					if _, err := w.Objects(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
