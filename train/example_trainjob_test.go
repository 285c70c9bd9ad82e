package train_test

import (
	"fmt"
	"os"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/train"
)

// A TrainJob of Kubeflow Trainer v2 on four H100 nodes, with the same
// settings a PyTorchJob takes: the accelerators go to resourcesPerNode,
// the rest of the hardware to the runtime patch cube manages.
func ExampleTrainer() {
	job, err := train.Trainer("llama-sft").
		Namespace("team-a").
		Image("registry.example.com/llm/train:2.4").
		Torchrun("sft.py", "--model", "/models/llama").
		Nodes(4).
		On(hardware.H100).Accelerators(8).
		Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	t := job.Spec.Trainer
	fmt.Println(job.Spec.RuntimeRef.Name, *t.NumNodes, *t.NumProcPerNode, t.ResourcesPerNode.Limits.Name("nvidia.com/gpu", "").String())
	fmt.Println(job.Spec.RuntimePatches[0].Manager)
	// Output:
	// torch-distributed 4 8 8
	// cube.dev/train
}

// A ClusterTrainingRuntime a platform installs for torch on H100 nodes,
// gang-scheduled by Volcano; TrainJobs name it with Runtime.
func ExampleClusterRuntime() {
	rt, err := train.ClusterRuntime("torch-h100", train.FrameworkTorch).
		Image("registry.example.com/llm/train:2.4").
		On(hardware.H100).
		SharedMemory("64Gi").
		Gang().
		Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	rj := rt.Spec.Template.Spec.ReplicatedJobs[0]
	fmt.Println(rt.Labels["trainer.kubeflow.org/framework"], rj.Name, rj.Template.Labels["trainer.kubeflow.org/trainjob-ancestor-step"], rt.Spec.PodGroupPolicy.Volcano != nil)
	// Output: torch node trainer true
}
