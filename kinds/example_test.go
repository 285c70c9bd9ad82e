package kinds_test

import (
	"fmt"
	"slices"

	"github.com/cubestudio/cube/kinds"
)

// All lists the kinds a Client is given so that it reads their phase; a
// program passes them with cube.Kinds(kinds.All()...).
func ExampleAll() {
	var names []string
	for _, k := range kinds.All() {
		n := k.GroupKind.String()
		if k.Completes {
			n += " (runs to completion)"
		}
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Println(n)
	}
	// Output:
	// ClusterQueue.kueue.x-k8s.io
	// CronWorkflow.argoproj.io
	// Experiment.kubeflow.org (runs to completion)
	// HTTPRoute.gateway.networking.k8s.io
	// Job.batch.volcano.sh (runs to completion)
	// JobSet.jobset.x-k8s.io (runs to completion)
	// LeaderWorkerSet.leaderworkerset.x-k8s.io
	// LocalQueue.kueue.x-k8s.io
	// MPIJob.kubeflow.org (runs to completion)
	// MXJob.kubeflow.org (runs to completion)
	// PaddleJob.kubeflow.org (runs to completion)
	// PyTorchJob.kubeflow.org (runs to completion)
	// Queue.scheduling.volcano.sh
	// RayJob.ray.io (runs to completion)
	// ResourceFlavor.kueue.x-k8s.io
	// TFJob.kubeflow.org (runs to completion)
	// TrainJob.trainer.kubeflow.org (runs to completion)
	// Workflow.argoproj.io (runs to completion)
	// WorkloadPriorityClass.kueue.x-k8s.io
	// XGBoostJob.kubeflow.org (runs to completion)
}
