// Package tune searches hyperparameters: a typed search space and objective
// that render as a Katib Experiment (kubeflow.org/v1beta1, Katib v0.19.0)
// over any cube workload, and Local, an in-process tuner that runs the same
// search with trials as Go functions.
//
//	exp := tune.New("mnist").
//		Namespace("team-a").
//		Objective(tune.Maximize("accuracy").Goal(0.95).Also("loss")).
//		Algorithm(tune.TPE().Seed(1)).
//		Param(
//			tune.Float("lr", 1e-5, 1e-2).Log(),
//			tune.Int("layers", 2, 8),
//			tune.Choice("optimizer", "adam", "sgd"),
//		).
//		Trial(train.PyTorch("mnist").Image(img).Torchrun("mnist.py").Workers(2),
//			tune.Arg("lr", "--lr"), tune.Arg("layers", "--layers"),
//			tune.Env("optimizer", "OPTIMIZER")).
//		EarlyStop(tune.MedianStop()).
//		Parallel(4).MaxTrials(40).MaxFailed(3)
//	rel, err := client.Apply(ctx, exp)
//
// # Search space and objective
//
// Float (Log for Katib's logUniform distribution, Step for a grid), Int,
// Choice (Katib "categorical") and Discrete are values; so are Objective
// (Maximize or Minimize a metric, Goal, Also for additional metrics),
// Algorithm and EarlyStopping. Every algorithm Katib v0.19.0 ships has a
// constructor — Random, TPE, Grid, MultivariateTPE, CMAES, Sobol, Bayesian,
// Hyperband, PBT — and its settings are checked by name and range the way
// its suggestion service checks them (hyperopt, optuna, goptuna, skopt,
// hyperband and pbt in Katib's pkg/suggestion/v1beta1): a setting the
// service does not know is an error, also for goptuna, which would ignore
// it. Grid needs a step on every Float and no more trials than
// combinations, CMA-ES two numeric parameters, Hyperband a numeric
// resource parameter and enough parallel trials for its first bracket, PBT
// a population of at least five. MedianStop is Katib's medianstop.
//
// Metrics are collected from StdOut (default; optional formats), a File
// (text or JSON), TensorFlowEvent files, a Prometheus endpoint, Push (the
// trial reports itself) or a Custom sidecar.
//
// # Trials
//
// Trial takes any cube.Workload whose object Katib can run: a batch Job,
// PyTorchJob, TFJob, MPIJob or XGBoostJob (Katib's default trialResources),
// or another kind the Katib controller is configured for, given
// PrimaryContainer, PrimaryPodLabels and Conditions. The object becomes
// trialSpec without its name and namespace (Katib names each trial's
// object), its cube release labels moved to the experiment's release.
// Parameters reach it through ${trialParameters.x} placeholders: Arg
// appends a flag and the placeholder to the primary container's args in
// every pod, Env sets a variable on every container, and Ref returns the
// placeholder to put anywhere by hand. Every parameter must reach the
// trial, and every placeholder must name a parameter. ConfigMaps and
// Secrets the workload renders (a DeepSpeed config) are applied beside the
// Experiment and shared by all trials; Katib substitutes parameters only in
// the trial object, so a placeholder inside them is an error.
//
// For the known kinds the primary container, the primary pod labels and the
// success and failure conditions are filled in: the container the
// training-operator names for the kind (pytorch, tensorflow, mpi, xgboost)
// or a Job's only container; training.kubeflow.org/job-role=master, which
// the training-operator gives the Master (PyTorch, XGBoost), the Chief or
// worker 0 (TF, PyTorch without a Master) and the MPI launcher; and
// Katib's own default conditions per kind.
//
// Build returns the typed Experiment and Objects the shared objects and the
// Experiment, with every problem at once as a field.ErrorList. The tests
// apply every algorithm over Job, PyTorchJob, TFJob and MPIJob trials, and
// every collector, to a real API server with Katib's CRDs and strict field
// validation, and run Katib's own validating-webhook logic over each.
//
// # Following an experiment
//
// Importing the package registers the Experiment's status reader with cube,
// so Release.Wait ends when Katib marks it Succeeded or Failed, and the
// release status carries the trial counts. ProgressOf reads the counts and
// the current optimal trial, whose parameters Optimum.Float and Optimum.Int
// parse.
//
// # The local tuner
//
// NewLocal (or LocalFrom, which takes an Experiment's space, objective,
// algorithm, seed, early stopping, MaxTrials and Parallel) runs the same
// search in-process, Parallel trials at a time. A trial is a Go function
// (Run), a local process (RunCommand: a command line, parameters placed
// with Arg, Env and Ref) or any cube Workload an Experiment could run
// (RunWorkload: its job's main container's command). Processes and
// workloads run as one-step pipelines on pipeline's local runner, and print
// their metrics as Katib's StdOut collector reads them (name=value); each
// value of the objective is a report as it is printed, and the trial's
// value is the best, as Katib's default metric strategy.
//
// A seed fixes every trial's values whatever the parallelism: trial i is
// sampled from, and judged against, exactly the trials 0..i-parallel,
// waiting for them if needed, and the trials between (running, or not yet
// seen) are the same ones every time. A trial's error or panic fails that
// trial, not the study. StudyFile keeps the study in a file, one fsynced
// JSON line per finished trial, so a killed study resumes without running
// its finished trials again and gives the others the values they would
// have had (a torn last line is ignored; a file from another study is
// refused, naming what differs). OnProgress reports the counts and the
// best trial as trials finish.
//
// Samplers: Random; Grid (every combination, in a seeded order); Sobol
// (Joe and Kuo's direction numbers, a seeded digital shift, up to 32
// parameters); TPE, univariate as hyperopt's, and MultivariateTPE, one
// product kernel per trial (bandwidths from the neighbour gaps, Optuna's
// magic clip, Choices by their counts and redrawn uniformly one time in
// five); CMAES (Hansen's tutorial, generations of 4+⌊3 ln n⌋ trials over the
// unit cube); and Bayesian, a Gaussian process with a Matérn 5/2 kernel
// and expected improvement, its objective log-warped and standardised. With
// Parallel above 1 the model-based ones use a constant liar (ConstantLiar,
// on by default). Settings are checked as Katib's services check them, and
// those a local sampler cannot honour (a CMA-ES restart strategy, a
// Bayesian estimator other than GP or acquisition other than EI) are
// refused.
//
// Early stopping through Trial.Report: MedianStop (Katib's medianstop),
// and, local only, HalvingStop (asynchronous successive halving) and
// HyperbandStop (Hyperband's brackets of successive halving).
//
// # Benchmark against Optuna
//
// BenchmarkAgainstOptuna (bench_test.go; Optuna's side is
// testdata/optuna_bench.py, run with Debian's python3-optuna 3.1.0) runs
// both in one go: 20 seeds, each study 100 trials, the best value after 25,
// 50 and 100 trials, Optuna's samplers at their defaults. Regret is the best
// value found minus the global minimum; median [interquartile range] over
// the seeds; time is the median wall time per trial of a study, which,
// since the functions cost nothing, is the sampler's (Go: whole Run; Optuna:
// study.optimize). Measured on a shared 2-core machine:
//
//	BENCHTABLE
package tune
