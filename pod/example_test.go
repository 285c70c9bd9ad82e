package pod_test

import (
	"fmt"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/train"
)

// The pod settings are the same on every workload: here on a PyTorch job,
// whose type embeds pod.Builder.
func ExampleBuilder() {
	job, err := train.PyTorch("etl").
		Image("python:3.12").
		Command("python", "etl.py").
		EnvFromSecret("DB_PASSWORD", pod.SecretKeyRef{Name: "db", Key: "password"}).
		CPU("2").Memory("4Gi").
		PVC("warehouse", "/data").
		Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	c := job.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster].Template.Spec.Containers[0]
	out, _ := yaml.Marshal(struct {
		Image   string
		Command []string
		Env     any
		Limits  any
		Mounts  any
	}{c.Image, c.Command, c.Env, c.Resources.Limits, c.VolumeMounts})
	fmt.Print(string(out))
	// Output:
}

// Problems are recorded while chaining and come back together, each under
// the field it belongs to.
func ExampleBuilder_errors() {
	_, err := train.PyTorch("etl").CPU("two").Accelerators(-1).
		EnvFromSecret("TOKEN", pod.SecretKeyRef{}).Build()
	fmt.Println(err)
	// Output:
}
