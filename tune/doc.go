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
//		Parallelism(4).MaxTrials(40).MaxFailedTrials(3)
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
// a population of at least five, a Step on every Float and the FromVolume
// resume policy (rendered when Resume is not set). MedianStop is Katib's
// medianstop.
//
// A parameter's declaration holds in every trial, or Build says which
// service would not honour it (Katib v0.19.0's services differ): skopt
// (Bayesian) samples every Float log-uniformly and every Int uniformly, so
// its Floats need Log and its Ints no Log, and it takes no Step; goptuna
// (CMAES, Sobol) and Hyperband ignore Log, and Hyperband the Step too;
// Grid ignores Log on an Int; hyperopt (Random, TPE) draws stepped values
// as multiples of the step, so min and max must be multiples of it, and
// never reaches the max of a log-scaled Int. MultivariateTPE honours
// everything. testdata/contracts/katib.tsv records these facts with their
// upstream files. The local tuner honours every declaration.
//
// Metrics are collected from StdOut (default; optional formats), a File
// (text or JSON), TensorFlowEvent files, Push (the trial reports itself)
// or a Custom sidecar. Prometheus is refused: Katib v0.19.0 ships no
// Prometheus collector and its default katib-config lists none.
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
// Kinds returns the Experiment's status reader: a cube.Client given it
// (cube.Kinds(tune.Kinds()...), or kinds.All()) ends Release.Wait when
// Katib marks the Experiment Succeeded or Failed, and the release status
// carries the trial counts. A client without it reads the Experiment
// Unknown, and Wait for it fails at once with cube.ErrNeverReaches.
// ProgressOf reads the counts and the current optimal trial, whose
// parameters Optimum.Float and Optimum.Int parse.
//
// # The local tuner
//
// NewLocal (or LocalFrom, which takes an Experiment's space, objective,
// algorithm, seed, early stopping, MaxTrials and Parallelism) runs the same
// search in-process, Parallelism trials at a time. A trial is a Go function
// (Run), a local process (RunCommand: a command line, parameters placed
// with Arg, Env and Ref) or any cube Workload an Experiment could run
// (RunWorkload: its job's main container's command). Processes and
// workloads run as local processes (package pipeline/local), and print
// their metrics as Katib's StdOut collector reads them (name=value); each
// value of the objective is a report as it is printed, and the trial's
// value is the best, as Katib's default metric strategy.
//
// A seed fixes every trial's values whatever the parallelism: trial i is
// sampled from, and judged against, exactly the trials 0..i-parallel,
// waiting for them if needed, and the trials between (running, or not yet
// seen) are the same ones every time. A trial's error or panic fails that
// trial, not the study; Run returns an error when every trial failed.
// Reading a parameter the space lacks (or of another kind) with
// Trial.Float, Int or String, and a Report of NaN or an infinity, fail the
// trial too, naming the mistake. StudyFile keeps the study in a file, one fsynced
// JSON line per finished trial, so a killed study resumes without running
// its finished trials again and gives the others the values they would
// have had (a torn last line is ignored; a file from another study is
// refused, naming what differs). OnProgress reports the counts and the
// best trial as trials finish.
//
// The default sampler is Auto: it reads the space (how many dimensions,
// how many of them Choices), the budget and the parallelism, and runs a
// Sobol design, then a portfolio of a Gaussian process (multivariate TPE
// when most dimensions are Choices or there are more than 32), univariate
// TPE and, once the search has stagnated, CMA-ES from the best trial (with
// IPOP restarts): each trial goes to the sampler whose recent proposals
// rank best among the trials so far, so the GP proposes most trials of a
// smooth objective and TPE or CMA-ES take over a rugged one. Local.Plan
// (and Algorithm.Plan, for an Experiment) says what it runs and why, and
// the Katib algorithm an Experiment renders for the same study (cmaes,
// bayesianoptimization or multivariate-tpe); TrialResult.Sampler says
// which sampler proposed each trial.
//
// The other samplers: Random; Grid (every combination, in a seeded order);
// Sobol (Joe and Kuo's direction numbers, a seeded digital shift, up to 32
// parameters); TPE, univariate as hyperopt's, and MultivariateTPE, one
// product kernel per trial (bandwidths from the neighbour gaps, Optuna's
// magic clip, a Choice's kernel inside each component as Optuna's); CMAES
// (Hansen's tutorial, generations of 4+⌊3 ln n⌋ trials over the unit cube,
// started at a seeded point, IPOP restarts, and an integer mutation that
// keeps Choices and Ints moving); and Bayesian, a Gaussian process with a
// Matérn 5/2 kernel and expected improvement, its objective log-warped and
// standardised. With Parallelism above 1 the model-based ones use a
// constant liar (ConstantLiar, on by default). Settings are checked as
// Katib's services check them, and those a local sampler cannot honour (a
// CMA-ES restart strategy other than ipop or none, a Bayesian estimator
// other than GP or acquisition other than EI) are refused.
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
//	function     sampler        regret@25 median [IQR]      regret@50 median [IQR]           regret@100 median [IQR]         time/trial
//	branin       cube-gp        0.02255 [0.004097, 0.0521]  0.000866 [0.000484, 0.002758]    7.12e-05 [3.06e-05, 0.0001574]  22.4ms
//	branin       cube-tpe       0.7135 [0.2349, 2.331]      0.5063 [0.16, 0.6663]            0.06357 [0.02457, 0.1285]       0.46ms
//	branin       cube-mvtpe     0.8313 [0.4201, 1.511]      0.1173 [0.07144, 0.5053]         0.03365 [0.01696, 0.1137]       1.29ms
//	branin       cube-cmaes     1.662 [0.985, 3.237]        0.3472 [0.2362, 0.9528]          0.01429 [0.00656, 0.04302]      0.0203ms
//	branin       cube-sobol     1.177 [0.3877, 2.188]       0.4076 [0.2334, 1.025]           0.3591 [0.1936, 0.562]          0.0638ms
//	branin       cube-random    1.961 [1.349, 3.04]         0.8299 [0.3729, 1.132]           0.2633 [0.1241, 0.5245]         0.0221ms
//	branin       optuna-tpe     0.5819 [0.2443, 1.142]      0.1724 [0.109, 0.2024]           0.01212 [0.006181, 0.03134]     6.23ms
//	branin       optuna-cmaes   2.407 [0.8641, 5.445]       0.7544 [0.1735, 2.072]           0.01345 [0.002796, 0.06793]     0.984ms
//	branin       optuna-random  1.462 [0.4574, 3.835]       0.7465 [0.1639, 1.458]           0.3801 [0.1359, 0.7365]         0.0777ms
//	hartmann6    cube-gp        0.8234 [0.4339, 1.03]       0.06637 [0.01861, 0.1593]        0.00571 [0.00392, 0.1223]       38.8ms
//	hartmann6    cube-tpe       1.532 [1.118, 1.962]        0.604 [0.4629, 0.9214]           0.3155 [0.2049, 0.4236]         1.81ms
//	hartmann6    cube-mvtpe     1.173 [0.7249, 1.371]       0.374 [0.2495, 0.5233]           0.09815 [0.06012, 0.2218]       3.69ms
//	hartmann6    cube-cmaes     1.216 [0.838, 1.743]        0.7922 [0.5586, 0.9331]          0.3227 [0.1785, 0.4378]         0.00976ms
//	hartmann6    cube-sobol     1.617 [1.258, 2.033]        1.562 [1.207, 1.902]             1.212 [0.8355, 1.505]           0.00792ms
//	hartmann6    cube-random    1.965 [1.435, 2.249]        1.626 [1.329, 1.886]             1.352 [0.9629, 1.621]           0.00962ms
//	hartmann6    optuna-tpe     1.388 [0.8874, 1.716]       0.5617 [0.4433, 0.7699]          0.254 [0.1656, 0.3434]          26ms
//	hartmann6    optuna-cmaes   1.539 [1.018, 1.745]        0.728 [0.5261, 1.034]            0.2749 [0.2109, 0.3629]         0.882ms
//	hartmann6    optuna-random  2.172 [1.675, 2.39]         1.554 [1.226, 1.955]             1.199 [0.9328, 1.307]           1.15ms
//	rosenbrock4  cube-gp        205.8 [92.1, 377.4]         5.15 [4.326, 8.131]              2.728 [1.859, 3.613]            24.5ms
//	rosenbrock4  cube-tpe       1586 [1110, 3967]           492.5 [227.2, 1026]              70.07 [33.96, 154.7]            1.87ms
//	rosenbrock4  cube-mvtpe     674.2 [462.4, 1424]         149.6 [69.07, 216.5]             12.65 [7.306, 23.87]            1.54ms
//	rosenbrock4  cube-cmaes     483.2 [293.1, 1077]         196.9 [80.4, 252.5]              31.89 [12.94, 54.06]            0.00967ms
//	rosenbrock4  cube-sobol     3221 [1019, 4976]           987.4 [779.7, 2481]              931.5 [516.1, 1794]             0.0226ms
//	rosenbrock4  cube-random    4115 [1618, 6776]           2788 [1086, 5036]                1085 [769.5, 1802]              0.00934ms
//	rosenbrock4  optuna-tpe     1209 [684.4, 2542]          322.2 [165.2, 691]               61.18 [36.76, 198.3]            211ms
//	rosenbrock4  optuna-cmaes   355.3 [246.8, 701.6]        122.6 [70.01, 256.2]             44.72 [24.61, 99.92]            4.12ms
//	rosenbrock4  optuna-random  5109 [2854, 1.007e+04]      2796 [862.3, 5724]               858.8 [705.4, 1804]             0.697ms
//	mixed        cube-gp        0.01513 [0.00294, 0.07138]  0.000178 [4.575e-05, 0.0005616]  2.11e-06 [1.12e-06, 6.638e-06]  24.2ms
//	mixed        cube-tpe       1.008 [0.604, 1.273]        0.5483 [0.174, 0.7743]           0.1962 [0.007338, 0.5153]       1.33ms
//	mixed        cube-mvtpe     1.145 [0.4798, 1.42]        0.2789 [0.1556, 0.4967]          0.06421 [0.0169, 0.1193]        1.72ms
//	mixed        cube-cmaes     0.2664 [0.1258, 0.485]      0.09218 [0.05618, 0.1833]        0.003189 [0.001895, 0.00888]    0.0338ms
//	mixed        cube-sobol     1.045 [0.6358, 1.439]       0.7309 [0.5578, 1.052]           0.5554 [0.3451, 0.7597]         0.023ms
//	mixed        cube-random    1.246 [0.907, 1.766]        1.017 [0.5339, 1.194]            0.5496 [0.3594, 0.8836]         0.011ms
//	mixed        optuna-tpe     0.61 [0.3258, 0.7466]       0.1727 [0.1021, 0.4631]          0.03673 [0.00987, 0.1115]       207ms
//	mixed        optuna-cmaes   0.4335 [0.2056, 0.7468]     0.1501 [0.1096, 0.2223]          0.02682 [0.008041, 0.05444]     1.09ms
//	mixed        optuna-random  1.519 [1.167, 1.87]         1.142 [0.3659, 1.675]            0.5418 [0.3007, 0.8962]         0.54ms
//
// The goal — lower median regret than Optuna's TPE on every function at 50
// and 100 trials — is met by the Bayesian sampler (cube-gp) on all four
// functions at both budgets, by 1-4 orders of magnitude: Branin 0.00087
// and 0.00007 against 0.17 and 0.012, Hartmann-6 0.066 and 0.0057 against
// 0.56 and 0.25, Rosenbrock-4D 5.2 and 2.7 against 322 and 61, the mixed
// space 0.00018 and 0.000002 against 0.17 and 0.037. The TPEs alone do not
// meet it (univariate TPE loses on every function; multivariate TPE wins
// on Hartmann-6 and Rosenbrock-4D and on Branin at 50 only), nor does
// CMA-ES (it wins on the mixed space and Rosenbrock-4D at both budgets,
// and loses on Branin and Hartmann-6).
//
// Honesty about tuning: the one design choice made by looking at regret
// (the GP's log warping of the objective) was made on seeds 500-519, not
// on the table's seeds 0-19, and checked again on held-out seeds
// 1000-1019 (TUNE_BENCH_FIRST_SEED=1000): there cube-gp's median regret at
// 50 and 100 trials is Branin 0.0011 and 0.00007 (Optuna TPE 0.061 and
// 0.017), Hartmann-6 0.094 and 0.0060 (0.53 and 0.21), Rosenbrock-4D 6.5
// and 3.3 (468 and 103), mixed 0.00046 and 0.000013 (0.22 and 0.011):
// the goal holds on the held-out seeds too.
//
// Time is not settled by this run: the machine's load (other jobs, load
// average 20-40) changed during the 23-minute benchmark, so Optuna TPE's
// time per trial varied from 6 ms (Branin) to 211 ms (Rosenbrock-4D) for
// the same work, and cube-gp measured 22-39 ms. On a quieter machine
// (the earlier table of this package, and a local run on seeds 500-519)
// Optuna TPE took 23-92 ms a trial and cube-gp 6-13 ms; the GP's cost
// grows with the trial count (a Cholesky factorisation per fit, the
// hyperparameters refitted every 1+n/20 trials). The TPEs, CMA-ES, Sobol
// and random cost well under Optuna's samplers in every run.
package tune
