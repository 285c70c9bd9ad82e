package tune_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

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
		Parallelism(2).MaxTrials(20).MaxFailedTrials(2)
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
		Parallelism(4).MaxTrials(2).
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
	).Algorithm(tune.Bayesian()).MaxTrials(60).Parallelism(4).Seed(7)
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
	// trials: 60, best loss 0.000 at x=1.00 lr=1.0e-03
}

// A study stored in a file resumes where it stopped: here the first run
// ends after 10 of 20 trials (its context is cancelled), and the second
// runs only the other 10, with the values an uninterrupted study gives.
func ExampleLocal_StudyFile() {
	dir, err := os.MkdirTemp("", "study")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	study := func() *tune.Local {
		return tune.NewLocal(tune.Minimize("loss"), tune.Float("x", -5, 5)).
			Algorithm(tune.TPE()).MaxTrials(20).Seed(3).StudyFile(filepath.Join(dir, "study.jsonl"))
	}
	ran := 0
	ctx, cancel := context.WithCancel(context.Background())
	_, err = study().Run(ctx, func(_ context.Context, t *tune.Trial) (float64, error) {
		ran++
		if t.Number == 9 {
			cancel() // as if the process died after trial 9
		}
		return math.Pow(t.Float("x")-1, 2), nil
	})
	fmt.Println("first run:", ran, "trials,", err)
	ran = 0
	res, err := study().Run(context.Background(), func(_ context.Context, t *tune.Trial) (float64, error) {
		ran++
		return math.Pow(t.Float("x")-1, 2), nil
	})
	fmt.Println("second run:", ran, "trials,", err, "- the study has", len(res.Trials))
	// Output:
	// first run: 10 trials, context canceled
	// second run: 10 trials, <nil> - the study has 20
}

// OnProgress follows a study: the counts and the best trial so far, each
// time a trial finishes.
func ExampleLocal_OnProgress() {
	_, err := tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1)).MaxTrials(4).Seed(1).
		OnProgress(func(p tune.LocalProgress) {
			fmt.Printf("%d/%d done, best %.3f (trial %d)\n", p.Finished, p.Trials, p.Best.Value, p.Best.Number)
		}).
		Run(context.Background(), func(_ context.Context, t *tune.Trial) (float64, error) {
			return math.Abs(t.Float("x") - 0.3), nil
		})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// 1/4 done, best 0.200 (trial 0)
	// 2/4 done, best 0.031 (trial 1)
	// 3/4 done, best 0.031 (trial 1)
	// 4/4 done, best 0.031 (trial 1)
}

// HalvingStop is asynchronous successive halving: at reports 1, 3, 9...
// (Eta 3) a trial goes on only if it is among the best third of the trials
// that got there.
func ExampleHalvingStop() {
	res, err := tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1)).
		EarlyStop(tune.HalvingStop().Eta(3)).MaxTrials(30).Seed(4).
		Run(context.Background(), func(_ context.Context, t *tune.Trial) (float64, error) {
			var loss float64
			for epoch := 1; epoch <= 9; epoch++ {
				loss = t.Float("x") + 1/float64(epoch)
				if err := t.Report(loss); err != nil {
					return 0, err // tune.ErrPruned: the trial is stopped
				}
			}
			return loss, nil
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	epochs := 0
	for _, r := range res.Trials {
		epochs += len(r.Reports)
	}
	fmt.Printf("%d epochs instead of %d; best loss %.3f\n", epochs, 30*9, res.Best.Value)
	// Output:
	// 116 epochs instead of 270; best loss 0.150
}

// RunCommand runs each trial as a process that prints its metric as Katib
// reads it (name=value).
func ExampleLocal_RunCommand() {
	res, err := tune.NewLocal(tune.Minimize("loss"), tune.Int("n", 0, 9)).Algorithm(tune.Grid()).MaxTrials(10).
		RunCommand(context.Background(), []string{"sh", "-c", `echo "loss=$(( (N - 4) * (N - 4) ))"`}, tune.Env("n", "N"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("best n:", res.Best.Int("n"), "loss", res.Best.Value)
	// Output:
	// best n: 4 loss 0
}

// Without Algorithm a study runs Auto, which chooses from the space, the
// budget and the parallelism; Plan says what it runs locally, the Katib
// algorithm an Experiment of the same study renders, and why.
func ExampleLocal_Plan() {
	study := tune.NewLocal(tune.Minimize("loss"),
		tune.Float("dropout", 0, 0.5),
		tune.Float("lr", 1e-5, 1e-1).Log(),
		tune.Int("layers", 1, 8),
		tune.Choice("optimizer", "adam", "sgd"),
	).MaxTrials(60).Parallelism(2).Seed(7)
	plan := study.Plan()
	fmt.Println(plan.Local)
	fmt.Println(plan.Katib.Name())
	fmt.Println(plan.Reason)
	res, err := study.Run(context.Background(), func(_ context.Context, t *tune.Trial) (float64, error) {
		loss := math.Pow(t.Float("dropout")-0.2, 2) + math.Pow(math.Log10(t.Float("lr"))+3, 2) + math.Abs(float64(t.Int("layers")-4))/10
		if t.String("optimizer") == "sgd" {
			loss += 0.5
		}
		return loss, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("first trial by %s, trial 10 by %s; best %s with %s\n", res.Trials[0].Sampler, res.Trials[10].Sampler,
		res.Best.Values["optimizer"], res.Best.Sampler)
	// Output:
	// a design of 10 trials (the centre of the space, then sobol), then bayesianoptimization until 3 of its proposals in a row do not improve, then a portfolio of bayesianoptimization, tpe (univariate), cmaes started at the best trial so far with the shape of the better half of the trials (IPOP restarts): each trial goes to the one whose last 8 proposals did best; from trial 20 a trust region joins it: the expected improvement of a GP fitted to the basin within a box around the best trial and a Gaussian with the shape of the better half of the trials, larger after new bests and smaller without them; a proposal that repeats a trial run or running moves to the configuration not yet run, of its nearest and those along one parameter, that the GP expects best
	// multivariate-tpe
	// 4 dimensions, 1 of them Choices: a Gaussian process with expected improvement learns the most from each trial (its kernel a product over the parameters, or from trial 20 their sum where that fits the trials better: an objective that is a sum of one term per parameter, per value of the Choices where they move the others' best values); 2 trials at once: the model counts running trials as bad ones (the constant liar), with the product kernel while any are running. In Katib: multivariate-tpe (Optuna): Choices or Discretes, which it models jointly with every other kind
	// first trial by sobol, trial 10 by bayesianoptimization; best adam with trust-region
}

// A trial that fails is a bad trial to the models: here every batch above
// 384 runs out of memory, the best batch is just below, and after its
// design Auto sends few trials above (when failed trials were left out of
// the models, all 30 went there: nothing had been seen there to avoid).
func ExampleLocal_Run_failedTrials() {
	study := tune.NewLocal(tune.Minimize("loss"),
		tune.Float("lr", 1e-4, 1e-1).Log(),
		tune.Int("batch", 16, 1024).Log(),
	).MaxTrials(40).Seed(3)
	res, err := study.Run(context.Background(), func(_ context.Context, t *tune.Trial) (float64, error) {
		if t.Int("batch") > 384 {
			return 0, errors.New("CUDA out of memory")
		}
		return math.Pow(math.Log10(t.Float("lr"))+2.5, 2) - math.Log2(float64(t.Int("batch")))/10, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	failed := 0
	for _, r := range res.Trials[10:] {
		if r.State == cube.Failed {
			failed++
		}
	}
	fmt.Printf("out of memory after the design: %d of 30\n", failed)
	fmt.Printf("best: batch %d, lr %.1e\n", res.Best.Int("batch"), res.Best.Float("lr"))
	// Output:
	// out of memory after the design: 7 of 30
	// best: batch 378, lr 3.6e-03
}
