package tenant_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
)

// A tenant queued by Kueue: its CPU, memory and accelerator quota is a
// ClusterQueue's, one ResourceFlavor per accelerator profile, in a cohort
// where it may borrow two more H100s and lends at most four of its own.
// Its jobs enter the LocalQueue named after it (LocalQueue("team-a") on the
// builder).
func ExampleSpec_Queueing() {
	team := tenant.New("team-a").
		CPU("64").Memory("512Gi").
		Accelerators(hardware.H100, 8).
		Queueing(tenant.Kueue).Cohort("research").
		BorrowingLimit("nvidia.com/gpu", "2").LendingLimit("nvidia.com/gpu", "4").
		QueueWeight(2)
	// The flavors the ClusterQueue names are the platform's, applied once
	// for every tenant.
	flavors, err := tenant.Flavors("kueue-flavors", hardware.H100).Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	objs, err := team.Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range append(flavors, objs[:5]...) {
		fmt.Println(o.GetObjectKind().GroupVersionKind().Kind, o.GetName())
	}
	// Kueue's managedJobsNamespaceSelector picks the namespaces by this
	// label.
	fmt.Println(tenant.LabelQueueing + "=" + objs[0].GetLabels()[tenant.LabelQueueing])
	fmt.Println("quota:", len(objs[1].(*corev1.ResourceQuota).Spec.Hard), "entries")
	cq, err := runtime.DefaultUnstructuredConverter.ToUnstructured(objs[3])
	if err != nil {
		fmt.Println(err)
		return
	}
	spec, _ := yaml.Marshal(cq["spec"])
	fmt.Printf("%s", spec)
	// Output:
	// ResourceFlavor cube-default
	// ResourceFlavor cube-h100-sxm-80gb
	// Namespace team-a
	// ResourceQuota team-a
	// LimitRange team-a
	// ClusterQueue team-a
	// LocalQueue team-a
	// cube.dev/queueing=Kueue
	// quota: 0 entries
	// cohortName: research
	// fairSharing:
	//   weight: "2"
	// namespaceSelector:
	//   matchLabels:
	//     kubernetes.io/metadata.name: team-a
	// preemption:
	//   reclaimWithinCohort: Any
	//   withinClusterQueue: LowerPriority
	// resourceGroups:
	// - coveredResources:
	//   - cpu
	//   - memory
	//   flavors:
	//   - name: cube-default
	//     resources:
	//     - name: cpu
	//       nominalQuota: "64"
	//     - name: memory
	//       nominalQuota: 512Gi
	// - coveredResources:
	//   - nvidia.com/gpu
	//   flavors:
	//   - name: cube-h100-sxm-80gb
	//     resources:
	//     - borrowingLimit: "2"
	//       lendingLimit: "4"
	//       name: nvidia.com/gpu
	//       nominalQuota: "8"
}

// Two priorities for Kueue, applied once by the platform like the
// flavors; a job takes one with WorkloadPriority. Within a tenant a
// waiting "urgent" job preempts an admitted "batch" one.
func ExamplePriorities() {
	objs, err := tenant.Priorities("kueue-priorities",
		tenant.Priority{Name: "batch", Value: 100, Description: "preemptible"},
		tenant.Priority{Name: "urgent", Value: 1000},
	).Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range objs {
		u, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		fmt.Println(o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), u["value"])
	}
	job, err := train.PyTorch("sft").LocalQueue("team-a").WorkloadPriority("urgent").Image("trainer:1").Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job[0].GetLabels()["kueue.x-k8s.io/priority-class"])
	// Output:
	// WorkloadPriorityClass batch 100
	// WorkloadPriorityClass urgent 1000
	// urgent
}

// Two PriorityClasses for kube-scheduler, applied once by the platform:
// "batch" is every pod's default and waits for room instead of evicting
// anything; "urgent" evicts pods of lower priority. A pod takes one with
// PriorityClass.
func ExamplePodPriorities() {
	objs, err := tenant.PodPriorities("pod-priorities",
		tenant.PodPriority{Name: "batch", Value: 100, NoPreemption: true, Default: true},
		tenant.PodPriority{Name: "urgent", Value: 100000, Description: "on-call inference"},
	).Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range objs {
		pc := o.(*schedulingv1.PriorityClass)
		fmt.Println(pc.Name, pc.Value, *pc.PreemptionPolicy, pc.GlobalDefault)
	}
	job, err := train.PyTorch("sft").PriorityClass("urgent").Image("trainer:1").Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	u, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(job[0])
	spec, _, _ := unstructured.NestedString(u, "spec", "pytorchReplicaSpecs", "Master", "template", "spec", "priorityClassName")
	fmt.Println(spec)
	// Output:
	// batch 100 Never true
	// urgent 100000 PreemptLowerPriority false
	// urgent
}
