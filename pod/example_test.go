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
	// Command:
	// - python
	// - etl.py
	// Env:
	// - name: DB_PASSWORD
	//   valueFrom:
	//     secretKeyRef:
	//       key: password
	//       name: db
	// Image: python:3.12
	// Limits:
	//   cpu: "2"
	//   memory: 4Gi
	// Mounts:
	// - mountPath: /data
	//   name: pvc-warehouse
}

// Problems are recorded while chaining and come back together, each under
// the field it belongs to.
func ExampleBuilder_errors() {
	_, err := train.PyTorch("etl").CPU("two").Accelerators(-1).
		EnvFromSecret("TOKEN", pod.SecretKeyRef{}).Build()
	for _, e := range err.(interface{ Errors() []error }).Errors() {
		fmt.Println(e)
	}
	// Output:
	// accelerators: Invalid value: -1: must not be negative
	// env[TOKEN].valueFrom.secretKeyRef: Required value: secret name and key are required
	// spec.pytorchReplicaSpecs[Master].template.spec.containers[0].image: Required value: an image is required (the same in spec.pytorchReplicaSpecs[Worker])
	// spec.pytorchReplicaSpecs[Master].template.spec.containers[0].resources.requests[cpu]: Invalid value: "two": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' (the same in spec.pytorchReplicaSpecs[Worker])
	// spec.pytorchReplicaSpecs[Master].template.spec.containers[0].resources.limits[cpu]: Invalid value: "two": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' (the same in spec.pytorchReplicaSpecs[Worker])
}
