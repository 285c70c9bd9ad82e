package tune_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/tune"
)

// An experiment that tunes a batch Job: the learning rate reaches the
// trial as an argument, the optimizer as an environment variable.
func ExampleNew() {
	exp := tune.New("mnist").
		Namespace("team-a").
		Objective(tune.Maximize("accuracy").Goal(0.99).Also("loss")).
		Algorithm(tune.TPE().Seed(1)).
		Param(
			tune.Float("lr", 1e-4, 1e-1).Log(),
			tune.Choice("optimizer", "adam", "sgd"),
		).
		Trial(batchJob("mnist"), tune.Arg("lr", "--lr"), tune.Env("optimizer", "OPTIMIZER")).
		EarlyStop(tune.MedianStop().MinTrials(3)).
		Parallel(2).MaxTrials(20).MaxFailed(2)
	if err := cube.Render(os.Stdout, exp); err != nil {
		fmt.Println(err)
	}
	// Output:
	// apiVersion: kubeflow.org/v1beta1
	// kind: Experiment
	// metadata:
	//   labels:
	//     app.kubernetes.io/managed-by: cube
	//     app.kubernetes.io/name: mnist
	//     app.kubernetes.io/part-of: mnist
	//     cube.dev/kind: experiment
	//     cube.dev/release: mnist
	//   name: mnist
	//   namespace: team-a
	// spec:
	//   algorithm:
	//     algorithmName: tpe
	//     algorithmSettings:
	//     - name: random_state
	//       value: "1"
	//   earlyStopping:
	//     algorithmName: medianstop
	//     algorithmSettings:
	//     - name: min_trials_required
	//       value: "3"
	//   maxFailedTrialCount: 2
	//   maxTrialCount: 20
	//   metricsCollectorSpec:
	//     collector:
	//       kind: StdOut
	//   objective:
	//     additionalMetricNames:
	//     - loss
	//     goal: 0.99
	//     objectiveMetricName: accuracy
	//     type: maximize
	//   parallelTrialCount: 2
	//   parameters:
	//   - feasibleSpace:
	//       distribution: logUniform
	//       max: "0.1"
	//       min: "0.0001"
	//     name: lr
	//     parameterType: double
	//   - feasibleSpace:
	//       list:
	//       - adam
	//       - sgd
	//     name: optimizer
	//     parameterType: categorical
	//   trialTemplate:
	//     failureCondition: status.conditions.#(type=="Failed")#|#(status=="True")#
	//     primaryContainerName: train
	//     successCondition: status.conditions.#(type=="Complete")#|#(status=="True")#
	//     trialParameters:
	//     - description: search parameter lr
	//       name: lr
	//       reference: lr
	//     - description: search parameter optimizer
	//       name: optimizer
	//       reference: optimizer
	//     trialSpec:
	//       apiVersion: batch/v1
	//       kind: Job
	//       metadata:
	//         labels:
	//           app.kubernetes.io/managed-by: cube
	//           app.kubernetes.io/name: mnist
	//           app.kubernetes.io/part-of: mnist
	//           cube.dev/kind: job
	//           cube.dev/release: mnist
	//       spec:
	//         template:
	//           metadata:
	//             labels:
	//               app.kubernetes.io/managed-by: cube
	//               cube.dev/release: mnist
	//           spec:
	//             containers:
	//             - args:
	//               - --lr
	//               - ${trialParameters.lr}
	//               command:
	//               - python
	//               - train.py
	//               env:
	//               - name: OPTIMIZER
	//                 value: ${trialParameters.optimizer}
	//               image: python:3.12-slim
	//               name: train
	//               resources: {}
	//             restartPolicy: Never
}

// Every problem comes back at once, with its field path.
func ExampleExperiment_Build() {
	_, err := tune.New("Bad_Name").
		Objective(tune.Minimize("loss").Also("loss")).
		Algorithm(tune.Grid().Gamma(0.5)).
		Param(tune.Float("lr", 0.1, 0.01), tune.Int("layers", 2, 8)).
		Trial(batchJob("train"), tune.Arg("layers", "--layers"), tune.Env("dropout", "DROPOUT")).
		Parallel(4).MaxTrials(2).
		Build()
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		for _, e := range agg.Errors() {
			fmt.Println(e)
		}
	}
	// Output:
	// metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')
	// spec.objective.additionalMetricNames[0]: Invalid value: "loss": is the objective metric already
	// spec.parameters[0].feasibleSpace.max: Invalid value: 0.01: must not be below min (0.1)
	// spec.parallelTrialCount: Invalid value: 4: must not exceed maxTrialCount
	// spec.algorithm.algorithmSettings[0].name: Unsupported value: "gamma": supported values: "random_state"
	// spec.parameters[0].feasibleSpace.step: Required value: grid needs a step on Float "lr"
	// trial.placements[1].param: Invalid value: "dropout": is not a parameter of the experiment
	// spec.parameters[0].name: Invalid value: "lr": reaches no trial: place it with tune.Arg, tune.Env or tune.Ref
}

// The local tuner runs the same search space in-process, trials as Go
// functions; it is deterministic for a seed.
func ExampleLocal() {
	study := tune.NewLocal(tune.Minimize("loss"),
		tune.Float("x", -5, 5),
		tune.Float("lr", 1e-5, 1e-1).Log(),
	).Algorithm(tune.TPE()).Trials(60).Parallel(4).Seed(7)
	res, err := study.Run(context.Background(), func(_ context.Context, t *tune.Trial) (float64, error) {
		return math.Pow(t.Float("x")-1, 2) + math.Pow(math.Log10(t.Float("lr"))+3, 2), nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("trials: %d, best loss %.3f at x=%.2f lr=%.1e\n",
		len(res.Trials), res.Best.Value, res.Best.Float("x"), res.Best.Float("lr"))
	// Output:
	// trials: 60, best loss 0.001 at x=0.98 lr=1.0e-03
}
