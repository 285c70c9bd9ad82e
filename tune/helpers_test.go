package tune_test

import (
	"errors"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/train"
	"github.com/cubestudio/cube/tune"
)

// batchJob is a plain batch Job workload with one container "train".
func batchJob(name string) cube.Workload {
	return cube.Objects(&batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: cube.Identity{Kind: "job", Release: name}.Labels()},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: cube.Identity{Kind: "job", Release: name}.Selector("")},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name:    "train",
					Image:   "python:3.12-slim",
					Command: []string{"python", "train.py"},
				}},
			},
		}},
	})
}

// pytorch is a PyTorchJob with a Master and two Workers.
func pytorch(name string) *train.PyTorchJob {
	return train.PyTorch(name).Image("pytorch/pytorch:2.4.0").Torchrun("mnist.py", "--epochs", "3").Workers(2)
}

// errorStrings returns every error of an aggregate, one string each.
func errorStrings(t *testing.T, err error) []string {
	t.Helper()
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		t.Fatalf("want an aggregate error, got %v", err)
	}
	var out []string
	for _, e := range agg.Errors() {
		out = append(out, e.Error())
	}
	return out
}

// containsAll reports the wanted substrings missing from errs.
func missing(errs []string, want ...string) []string {
	var out []string
	for _, w := range want {
		found := false
		for _, e := range errs {
			if strings.Contains(e, w) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, w)
		}
	}
	return out
}

// baseExperiment is a valid experiment over a batch Job.
func baseExperiment(name string) *tune.Experiment {
	return tune.New(name).
		Objective(tune.Maximize("accuracy").Goal(0.95).Also("loss")).
		Param(tune.Float("lr", 1e-5, 1e-2).Log(), tune.Int("layers", 2, 8), tune.Choice("optimizer", "adam", "sgd")).
		Trial(batchJob("train"), tune.Arg("lr", "--lr"), tune.Arg("layers", "--layers"), tune.Env("optimizer", "OPTIMIZER")).
		Parallelism(2).MaxTrials(12).MaxFailedTrials(3)
}

// pbtExperiment is a valid PBT experiment over a batch Job.
func pbtExperiment(name string) *tune.Experiment {
	return tune.New(name).Objective(tune.Maximize("accuracy")).
		Param(tune.Float("lr", 0.0001, 0.02).Step(0.0001), tune.Int("batch", 16, 128)).
		Trial(batchJob("train"), tune.Arg("lr", "--lr"), tune.Arg("batch", "--batch")).
		Algorithm(tune.PBT("/var/log/katib/checkpoints/", 5, 0.2))
}

// spaceExperiment is an experiment over params, each placed as a flag,
// searched with a.
func spaceExperiment(name string, a tune.Algorithm, params ...tune.Param) *tune.Experiment {
	places := make([]tune.Placement, len(params))
	for i, p := range params {
		places[i] = tune.Arg(p.Name(), "--"+p.Name())
	}
	return tune.New(name).Objective(tune.Minimize("loss")).Param(params...).Trial(batchJob("train"), places...).Algorithm(a)
}
