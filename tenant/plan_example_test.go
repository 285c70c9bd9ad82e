package tenant_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	kueue "github.com/cubestudio/cube/internal/kueue/v1beta2"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
)

// Before submitting, ask where Kueue would admit a job now. Here team-a
// and team-b share a cohort of two T4s each, and team-b uses none of its
// own: team-a's job of four T4s is admitted now, borrowing team-b's two,
// and a second job waits for them.
func ExamplePlan() {
	cluster := exampleCluster()
	ctx := context.Background()
	job := func(name string, workers int) cube.Workload {
		return train.PyTorch(name).LocalQueue("team-a").Image("pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime").
			Workers(workers).On(hardware.T4).Accelerators(2).CPU("1").Memory("4Gi")
	}
	plans, err := tenant.Plan(ctx, cluster, "team-a", job("sft", 1), job("eval", 0))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range plans {
		fmt.Println(p)
	}
	// Output:
	// PyTorchJob.kubeflow.org team-a/sft: Admissible: admitted now to ClusterQueue team-a: master ×1 on cube-default (cpu, memory), cube-t4 (nvidia.com/gpu); worker ×1 on cube-default (cpu, memory), cube-t4 (nvidia.com/gpu), borrowing nvidia.com/gpu 2 on cube-t4 from cohort lab
	// PyTorchJob.kubeflow.org team-a/eval: Waits: waits in ClusterQueue team-a for nvidia.com/gpu on flavor cube-t4 (needs 2, 0 free now, at most 4); Kueue looks for workloads to preempt for it
}

// exampleCluster is a cluster's state as a reader would return it: the
// platform's flavors, and the two tenants' queues as Kueue reports them.
func exampleCluster() client.Reader {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = kueue.AddToScheme(scheme)
	objs, _ := tenant.Flavors("kueue-flavors", hardware.T4).Objects()
	for _, team := range []string{"team-a", "team-b"} {
		tenantObjs, _ := tenant.New(team).CPU("16").Memory("64Gi").Accelerators(hardware.T4, 2).
			Queueing(tenant.Kueue).Cohort("lab").Objects()
		for _, o := range tenantObjs {
			switch o := o.(type) {
			case *kueue.ClusterQueue:
				o.Status.Conditions = []metav1.Condition{{Type: kueue.ClusterQueueActive, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
				o.Status.FlavorsReservation = []kueue.FlavorUsage{{Name: "cube-t4", Resources: []kueue.ResourceUsage{{Name: "nvidia.com/gpu", Total: resource.MustParse("0")}}}}
				objs = append(objs, o)
			case *kueue.LocalQueue, *corev1.Namespace:
				objs = append(objs, o)
			}
		}
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}
