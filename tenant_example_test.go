package cube_test

import (
	"errors"
	"fmt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/train"
)

// A team's namespace with quota for CPUs, memory and two kinds of
// accelerators, its Volcano queue, members, the account its pipelines run
// as, and network isolation with the exceptions KubeRay and Prometheus
// need. The containers of the namespace get default requests and no
// default limits.
func ExampleTenant() {
	tenant := cube.Tenant("team-a").
		Editors("alice").
		ViewerGroups("auditors").
		CPU("128").Memory("1Ti").Pods(100).
		GPUs("nvidia.com/gpu", 16).
		GPUs("huawei.com/Ascend910", 8).
		QueueWeight(2)
	objs, err := tenant.Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range objs {
		fmt.Println(o.GetObjectKind().GroupVersionKind().Kind, o.GetName())
	}
	quota := objs[1].(*corev1.ResourceQuota)
	limits := objs[2].(*corev1.LimitRange).Spec.Limits[0]
	hard := quota.Spec.Hard
	fmt.Println("quota:", hard.Name("requests.cpu", resource.DecimalSI), hard.Name("requests.memory", resource.BinarySI), hard.Name("requests.nvidia.com/gpu", resource.DecimalSI))
	fmt.Println("default requests:", limits.DefaultRequest.Cpu(), limits.DefaultRequest.Memory(), "limits:", len(limits.Default))
	// Output:
	// Namespace team-a
	// ResourceQuota team-a
	// LimitRange team-a
	// Queue team-a
	// ServiceAccount cube-pipeline
	// Role cube-pipeline
	// RoleBinding cube-pipeline
	// Role team-a-cube-edit
	// Role team-a-cube-view
	// RoleBinding team-a-edit
	// RoleBinding team-a-cube-edit
	// RoleBinding team-a-view
	// RoleBinding team-a-cube-view
	// NetworkPolicy team-a-isolation
	// NetworkPolicy team-a-allow-kuberay
	// NetworkPolicy team-a-allow-prometheus
	// quota: 128 1Ti 16
	// default requests: 100m 128Mi limits: 0
}

// A tenant says, before anything is applied, which pods its Pod Security
// level refuses: InfiniBand adds IPC_LOCK, which baseline forbids.
func ExampleTenantSpec_Admits() {
	job := train.PyTorch("llama-sft").Namespace("team-nlp").
		Image("nvcr.io/nvidia/pytorch:24.05-py3").Torchrun("sft.py").
		On(hardware.H100).Accelerators(8).Fabric(hardware.InfiniBand())
	tenant := cube.Tenant("team-nlp")
	var ps *cube.PodSecurityError
	if errors.As(tenant.Admits(job), &ps) {
		for _, v := range ps.Violations {
			fmt.Println(ps.Level, v.Template+":", v.Reasons)
		}
	}
	fmt.Println("with AllowRDMA:", tenant.AllowRDMA().Admits(job))
	// Output:
	// baseline:latest spec.pytorchReplicaSpecs.Master.template: non-default capabilities (container "pytorch" must not include "IPC_LOCK" in securityContext.capabilities.add)
	// baseline:latest spec.pytorchReplicaSpecs.Worker.template: non-default capabilities (container "pytorch" must not include "IPC_LOCK" in securityContext.capabilities.add)
	// with AllowRDMA: <nil>
}
