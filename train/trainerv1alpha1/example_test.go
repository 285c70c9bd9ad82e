package trainerv1alpha1_test

import (
	"encoding/json"
	"fmt"

	trainer "github.com/cubestudio/cube/train/trainerv1alpha1"
)

// A TrainJob as the API server returns it decodes into the mirrored
// types, and its copies are independent.
func ExampleTrainJob() {
	var j trainer.TrainJob
	err := json.Unmarshal([]byte(`{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob",
		"metadata":{"name":"ddp"},
		"spec":{"runtimeRef":{"name":"torch-distributed"},"trainer":{"numNodes":2}},
		"status":{"conditions":[{"type":"Complete","status":"True","reason":"AllJobsCompleted"}]}}`), &j)
	if err != nil {
		fmt.Println(err)
		return
	}
	c := j.DeepCopy()
	*c.Spec.Trainer.NumNodes = 4
	fmt.Println(j.Spec.RuntimeRef.Name, *j.Spec.Trainer.NumNodes, *c.Spec.Trainer.NumNodes, j.Status.Conditions[0].Type)
	// Output: torch-distributed 2 4 Complete
}
