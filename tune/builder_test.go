package tune_test

import (
	"math"
	"testing"

	common "github.com/kubeflow/katib/pkg/apis/controller/common/v1beta1"
	katibv1beta1 "github.com/kubeflow/katib/pkg/apis/controller/experiments/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/tune"
)

func TestPyTorchTrialFields(t *testing.T) {
	exp, err := tune.New("mnist").Namespace("team-a").
		Objective(tune.Maximize("accuracy").Goal(0.95).Also("loss")).
		Algorithm(tune.TPE().Seed(1)).
		Param(tune.Float("lr", 1e-5, 1e-2).Log(), tune.Int("layers", 2, 8).Step(2), tune.Choice("optimizer", "adam", "sgd"), tune.Discrete("batch", 32, 64)).
		Trial(pytorch("mnist-trial"), tune.Arg("lr", "--lr"), tune.Arg("layers", "--layers"), tune.Env("optimizer", "OPTIMIZER"), tune.Env("batch", "BATCH")).
		Parallelism(4).MaxTrials(40).MaxFailedTrials(3).Resume(tune.FromVolume).RetainTrials().
		Build()
	require.NoError(t, err)
	assert.Equal(t, "kubeflow.org/v1beta1", exp.APIVersion)
	assert.Equal(t, "Experiment", exp.Kind)
	assert.Equal(t, "team-a", exp.Namespace)
	assert.Equal(t, "mnist", exp.Labels[cube.LabelRelease])
	goal := 0.95
	assert.Equal(t, &common.ObjectiveSpec{Type: common.ObjectiveTypeMaximize, Goal: &goal, ObjectiveMetricName: "accuracy", AdditionalMetricNames: []string{"loss"}}, exp.Spec.Objective)
	assert.Equal(t, &common.AlgorithmSpec{AlgorithmName: "tpe", AlgorithmSettings: []common.AlgorithmSetting{{Name: "random_state", Value: "1"}}}, exp.Spec.Algorithm)
	assert.Equal(t, []katibv1beta1.ParameterSpec{
		{Name: "lr", ParameterType: katibv1beta1.ParameterTypeDouble, FeasibleSpace: katibv1beta1.FeasibleSpace{Min: "1e-05", Max: "0.01", Distribution: katibv1beta1.DistributionLogUniform}},
		{Name: "layers", ParameterType: katibv1beta1.ParameterTypeInt, FeasibleSpace: katibv1beta1.FeasibleSpace{Min: "2", Max: "8", Step: "2", Distribution: katibv1beta1.DistributionUniform}},
		{Name: "optimizer", ParameterType: katibv1beta1.ParameterTypeCategorical, FeasibleSpace: katibv1beta1.FeasibleSpace{List: []string{"adam", "sgd"}}},
		{Name: "batch", ParameterType: katibv1beta1.ParameterTypeDiscrete, FeasibleSpace: katibv1beta1.FeasibleSpace{List: []string{"32", "64"}}},
	}, exp.Spec.Parameters)
	assert.Equal(t, int32(4), *exp.Spec.ParallelTrialCount)
	assert.Equal(t, int32(40), *exp.Spec.MaxTrialCount)
	assert.Equal(t, int32(3), *exp.Spec.MaxFailedTrialCount)
	assert.Equal(t, tune.FromVolume, exp.Spec.ResumePolicy)
	assert.Equal(t, &common.MetricsCollectorSpec{Collector: &common.CollectorSpec{Kind: common.StdOutCollector}}, exp.Spec.MetricsCollectorSpec)

	tt := exp.Spec.TrialTemplate
	assert.True(t, tt.Retain)
	assert.Equal(t, "pytorch", tt.PrimaryContainerName)
	assert.Equal(t, map[string]string{"training.kubeflow.org/job-role": "master"}, tt.PrimaryPodLabels)
	assert.Equal(t, `status.conditions.#(type=="Succeeded")#|#(status=="True")#`, tt.SuccessCondition)
	assert.Equal(t, `status.conditions.#(type=="Failed")#|#(status=="True")#`, tt.FailureCondition)
	assert.Equal(t, []katibv1beta1.TrialParameterSpec{
		{Name: "lr", Reference: "lr", Description: "search parameter lr"},
		{Name: "layers", Reference: "layers", Description: "search parameter layers"},
		{Name: "optimizer", Reference: "optimizer", Description: "search parameter optimizer"},
		{Name: "batch", Reference: "batch", Description: "search parameter batch"},
	}, tt.TrialParameters)

	spec := tt.TrialSpec
	assert.Equal(t, "PyTorchJob", spec.GetKind())
	assert.Empty(t, spec.GetName(), "Katib names the trial's object")
	assert.Empty(t, spec.GetNamespace())
	assert.Equal(t, "mnist", spec.GetLabels()[cube.LabelRelease], "the trial belongs to the experiment's release")
	for _, role := range []string{"Master", "Worker"} {
		containers, found, err := unstructured.NestedSlice(spec.Object, "spec", "pytorchReplicaSpecs", role, "template", "spec", "containers")
		require.NoError(t, err)
		require.True(t, found, role)
		c := containers[0].(map[string]any)
		assert.Equal(t, []any{"--lr", "${trialParameters.lr}", "--layers", "${trialParameters.layers}"}, c["args"], role)
		assert.Contains(t, c["env"], map[string]any{"name": "OPTIMIZER", "value": "${trialParameters.optimizer}"}, role)
		assert.Contains(t, c["env"], map[string]any{"name": "BATCH", "value": "${trialParameters.batch}"}, role)
		podLabels, _, _ := unstructured.NestedStringMap(spec.Object, "spec", "pytorchReplicaSpecs", role, "template", "metadata", "labels")
		assert.Equal(t, "mnist", podLabels[cube.LabelRelease], role)
	}
}

func TestFreshObjects(t *testing.T) {
	e := baseExperiment("fresh")
	a, err := e.Build()
	require.NoError(t, err)
	a.Spec.Parameters[0].Name = "changed"
	a.Spec.TrialTemplate.TrialSpec.SetKind("Changed")
	*a.Spec.MaxTrialCount = 99
	b, err := e.Build()
	require.NoError(t, err)
	assert.Equal(t, "lr", b.Spec.Parameters[0].Name)
	assert.Equal(t, "Job", b.Spec.TrialTemplate.TrialSpec.GetKind())
	assert.Equal(t, int32(12), *b.Spec.MaxTrialCount)
}

func TestRefPlacesByHand(t *testing.T) {
	job := pytorch("hand").Torchrun("mnist.py", "--lr", tune.Ref("lr"))
	exp, err := tune.New("hand").Objective(tune.Minimize("loss")).Param(tune.Float("lr", 0.001, 0.1)).Trial(job).Build()
	require.NoError(t, err)
	assert.Equal(t, []katibv1beta1.TrialParameterSpec{{Name: "lr", Reference: "lr", Description: "search parameter lr"}}, exp.Spec.TrialTemplate.TrialParameters)
	assert.Equal(t, "${trialParameters.lr}", tune.Ref("lr"))
}

func TestOverridesForOtherKinds(t *testing.T) {
	// A kind cube knows no defaults for needs conditions and a container.
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("batch.volcano.sh/v1alpha1")
	u.SetKind("Job")
	u.SetName("vc")
	require.NoError(t, unstructured.SetNestedSlice(u.Object, []any{map[string]any{
		"name": "worker", "replicas": int64(1),
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "main", "image": "busybox"}}}},
	}}, "spec", "tasks"))
	base := func() *tune.Experiment {
		return tune.New("vc").Objective(tune.Minimize("loss")).Param(tune.Float("lr", 0.01, 0.1)).
			Trial(cube.Objects(u), tune.Arg("lr", "--lr"))
	}
	_, err := base().Build()
	assert.Empty(t, missing(errorStrings(t, err), "spec.trialTemplate.successCondition: Required value: cube knows no completion of Job"))

	exp, err := base().PrimaryContainer("main").
		PrimaryPodLabels(map[string]string{"volcano.sh/task-spec": "worker"}).
		Conditions(`status.[@this].#(state.phase=="Completed")#`, `status.[@this].#(state.phase=="Failed")#`).
		Build()
	require.NoError(t, err)
	assert.Equal(t, "main", exp.Spec.TrialTemplate.PrimaryContainerName)
	assert.Equal(t, map[string]string{"volcano.sh/task-spec": "worker"}, exp.Spec.TrialTemplate.PrimaryPodLabels)
	assert.Equal(t, `status.[@this].#(state.phase=="Completed")#`, exp.Spec.TrialTemplate.SuccessCondition)
}

func TestCollectorRendering(t *testing.T) {
	cases := map[string]struct {
		c    tune.Collector
		want *common.MetricsCollectorSpec
	}{
		"stdout format": {tune.StdOut(`(\w+)=(\d+)`), &common.MetricsCollectorSpec{
			Collector: &common.CollectorSpec{Kind: common.StdOutCollector},
			Source:    &common.SourceSpec{Filter: &common.FilterSpec{MetricsFormat: []string{`(\w+)=(\d+)`}}},
		}},
		"file json": {tune.File("/m/metrics.json").JSON(), &common.MetricsCollectorSpec{
			Collector: &common.CollectorSpec{Kind: common.FileCollector},
			Source:    &common.SourceSpec{FileSystemPath: &common.FileSystemPath{Path: "/m/metrics.json", Kind: common.FileKind, Format: common.JsonFormat}},
		}},
		"file text": {tune.File("/m/metrics.log"), &common.MetricsCollectorSpec{
			Collector: &common.CollectorSpec{Kind: common.FileCollector},
			Source:    &common.SourceSpec{FileSystemPath: &common.FileSystemPath{Path: "/m/metrics.log", Kind: common.FileKind, Format: common.TextFormat}},
		}},
		"tfevent": {tune.TensorFlowEvent("/m/tf"), &common.MetricsCollectorSpec{
			Collector: &common.CollectorSpec{Kind: common.TfEventCollector},
			Source:    &common.SourceSpec{FileSystemPath: &common.FileSystemPath{Path: "/m/tf", Kind: common.DirectoryKind}},
		}},
		"push": {tune.Push(), &common.MetricsCollectorSpec{Collector: &common.CollectorSpec{Kind: common.PushCollector}}},
		"custom": {tune.Custom(corev1.Container{Name: "c", Image: "i"}), &common.MetricsCollectorSpec{
			Collector: &common.CollectorSpec{Kind: common.CustomCollector, CustomCollector: &corev1.Container{Name: "c", Image: "i"}},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			exp, err := baseExperiment("c").Collect(tc.c).Build()
			require.NoError(t, err)
			assert.Equal(t, tc.want, exp.Spec.MetricsCollectorSpec)
		})
	}
}

// TestValidation checks every error path: each case's errors, exactly
// those paths and messages (substrings), all at once.
func TestValidation(t *testing.T) {
	cases := map[string]struct {
		e    func() *tune.Experiment
		want []string
	}{
		"nil": {func() *tune.Experiment { return nil }, []string{"metadata.name: Required value: the experiment is nil"}},
		"zero value": {func() *tune.Experiment { return &tune.Experiment{} }, []string{
			"metadata.name: Required value", "spec.objective: Required value", "spec.parameters: Required value", "spec.trialTemplate.trialSpec: Required value",
		}},
		"name too long": {func() *tune.Experiment {
			return baseExperiment("a-very-long-experiment-name-over-forty-chars")
		}, []string{"metadata.name: Too long"}},
		"objective": {func() *tune.Experiment {
			return baseExperiment("o").Objective(tune.Minimize("").Goal(math.NaN()).Also("a b", "x", "x"))
		}, []string{
			"spec.objective.objectiveMetricName: Required value",
			"spec.objective.goal: Invalid value",
			`spec.objective.additionalMetricNames[0]: Invalid value: "a b"`,
			`spec.objective.additionalMetricNames[2]: Duplicate value: "x"`,
		}},
		"parameters": {func() *tune.Experiment {
			refs := []string{}
			for _, n := range []string{"1bad", "neg", "step", "frac", "logstep", "c", "c2", "c3", "d", "d2", "d3", "negstep"} {
				refs = append(refs, tune.Ref(n))
			}
			return tune.New("p").Objective(tune.Minimize("loss")).Algorithm(tune.Random()).Trial(pytorch("t").Torchrun("m.py", refs...)).Param(
				tune.Float("", 0, 1), tune.Float("1bad", math.Inf(1), 1), tune.Float("neg", -1, 1).Log(),
				tune.Float("step", 0, 1).Step(2), tune.Int("frac", 0, 10).Step(0.5), tune.Float("logstep", 1, 10).Log().Step(1),
				tune.Choice("c"), tune.Choice("c2", "a", "a", ""), tune.Choice("c3", "a").Log(),
				tune.Discrete("d"), tune.Discrete("d2", 1, 1, math.NaN()), tune.Discrete("d3", 1).Step(1),
				tune.Float("step", 0, 1), tune.Param{}, tune.Float("negstep", 0, 1).Step(-1),
			)
		}, []string{
			"spec.parameters[0].name: Required value",
			`spec.parameters[1].name: Invalid value: "1bad"`,
			"spec.parameters[1].feasibleSpace.min: Invalid value: +Inf: must be finite",
			"spec.parameters[1].feasibleSpace.max: Invalid value: 1: must not be below min",
			"spec.parameters[2].feasibleSpace.min: Invalid value: -1: a log-scaled parameter needs a positive min",
			"spec.parameters[3].feasibleSpace.step: Invalid value: 2: is wider than the range",
			"spec.parameters[4].feasibleSpace.step: Invalid value: 0.5: an Int's step must be a whole number",
			"spec.parameters[5].feasibleSpace.step: Invalid value: 1: a log-scaled parameter cannot also have a step",
			"spec.parameters[6].feasibleSpace.list: Required value",
			`spec.parameters[7].feasibleSpace.list[1]: Duplicate value: "a"`,
			`spec.parameters[7].feasibleSpace.list[2]: Invalid value: "": must not be empty`,
			"spec.parameters[8].feasibleSpace: Invalid value: \"c3\": a Choice takes neither Log nor Step",
			"spec.parameters[9].feasibleSpace.list: Required value",
			"spec.parameters[10].feasibleSpace.list[1]: Duplicate value: 1",
			"spec.parameters[10].feasibleSpace.list[2]: Invalid value: NaN: must be finite",
			"spec.parameters[11].feasibleSpace: Invalid value: \"d3\": a Discrete takes neither Log nor Step",
			`spec.parameters[12].name: Duplicate value: "step"`,
			"spec.parameters[13].name: Required value",
			"spec.parameters[13].parameterType: Invalid value",
			"spec.parameters[14].feasibleSpace.step: Invalid value: -1: must be a positive finite number",
			`spec.parameters[3].feasibleSpace.step: Invalid value: 2: random, parameter "step": Katib's hyperopt service draws round(uniform(min, max)/step)·step`,
		}},
		"counts": {func() *tune.Experiment { return baseExperiment("n").Parallelism(0).MaxTrials(0).MaxFailedTrials(-1) }, []string{
			"spec.parallelTrialCount: Invalid value: 0: must be at least 1",
			"spec.maxTrialCount: Invalid value: 0: must be at least 1",
			"spec.maxFailedTrialCount: Invalid value: -1: must be at least 0",
		}},
		"counts exceed": {func() *tune.Experiment { return baseExperiment("n").Parallelism(5).MaxTrials(4).MaxFailedTrials(5) }, []string{
			"spec.parallelTrialCount: Invalid value: 5: must not exceed maxTrialCount",
			"spec.maxFailedTrialCount: Invalid value: 5: must not exceed maxTrialCount",
		}},
		"resume": {func() *tune.Experiment { return baseExperiment("r").Resume("Sometimes") }, []string{
			`spec.resumePolicy: Unsupported value: "Sometimes"`,
		}},
		"unknown algorithm": {func() *tune.Experiment { return baseExperiment("a").Algorithm(tune.Algorithm{}) }, []string{
			`spec.algorithm.algorithmName: Unsupported value: ""`,
		}},
		"tpe settings": {func() *tune.Experiment {
			return baseExperiment("a").Algorithm(tune.TPE().Gamma(1).PriorWeight(0).EICandidates(0).Seed(-1).Sigma(1))
		}, []string{
			`spec.algorithm.algorithmSettings[0].value: Invalid value: "1": gamma: must be in (0, 1)`,
			`spec.algorithm.algorithmSettings[1].value: Invalid value: "0": prior_weight`,
			`spec.algorithm.algorithmSettings[2].value: Invalid value: "0": n_EI_candidates: must be at least 1`,
			`spec.algorithm.algorithmSettings[3].value: Invalid value: "-1": random_state: must be at least 0`,
			`spec.algorithm.algorithmSettings[4].name: Unsupported value: "sigma"`,
		}},
		// numpy's RandomState refuses a seed of 2^32 or more when the
		// Python services first suggest.
		"seed beyond numpy": {func() *tune.Experiment { return baseExperiment("a").Algorithm(tune.Random().Seed(1 << 32)) }, []string{
			`spec.algorithm.algorithmSettings[0].value: Invalid value: "4294967296": random_state: must be at most 4294967295 (numpy's RandomState seed)`,
		}},
		"raw seed beyond int64": {func() *tune.Experiment {
			return baseExperiment("a").Algorithm(tune.MultivariateTPE().Setting("random_state", "99999999999999999999"))
		}, []string{
			`spec.algorithm.algorithmSettings[0].value: Invalid value: "99999999999999999999": random_state: must be at most 4294967295`,
		}},
		"multivariate-tpe settings": {func() *tune.Experiment {
			return baseExperiment("a").Algorithm(tune.MultivariateTPE().StartupTrials(-1).Setting("n_ei_candidates", "x"))
		}, []string{
			`spec.algorithm.algorithmSettings[0].value: Invalid value: "-1": n_startup_trials: must be at least 0`,
			`spec.algorithm.algorithmSettings[1].value: Invalid value: "x": n_ei_candidates: must be an integer`,
		}},
		"cmaes": {func() *tune.Experiment {
			return tune.New("cm").Objective(tune.Minimize("loss")).Param(tune.Float("lr", 0.01, 0.1), tune.Choice("o", "a")).
				Trial(batchJob("t"), tune.Arg("lr", "--lr"), tune.Env("o", "O")).
				Algorithm(tune.CMAES().Sigma(0).RestartStrategy("sometimes").Setting("random_state", "x"))
		}, []string{
			`spec.algorithm.algorithmSettings[0].value: Invalid value: "0": sigma`,
			`spec.algorithm.algorithmSettings[1].value: Invalid value: "sometimes": restart_strategy: must be one of`,
			`spec.algorithm.algorithmSettings[2].value: Invalid value: "x": random_state: must be an integer`,
			"spec.parameters: Invalid value: 1: CMA-ES needs at least two Float or Int parameters",
		}},
		"sobol takes no settings": {func() *tune.Experiment { return baseExperiment("s").Algorithm(tune.Sobol().Seed(1)) }, []string{
			`spec.algorithm.algorithmSettings[0].name: Unsupported value: "random_state"`,
			`spec.parameters[0].feasibleSpace.distribution: Invalid value: "logUniform": sobol, parameter "lr": Katib's goptuna service samples uniformly whatever the distribution`,
		}},
		"bayesian": {func() *tune.Experiment {
			return baseExperiment("b").Algorithm(tune.Bayesian().BaseEstimator("NN").InitialPoints(-1).AcquisitionFunc("UCB").AcquisitionOptimizer("adam"))
		}, []string{
			`algorithmSettings[0].value: Invalid value: "NN": base_estimator: must be one of`,
			`algorithmSettings[1].value: Invalid value: "-1": n_initial_points: must be at least 0`,
			`algorithmSettings[2].value: Invalid value: "UCB": acq_func`,
			`algorithmSettings[3].value: Invalid value: "adam": acq_optimizer`,
		}},
		"grid": {func() *tune.Experiment { return baseExperiment("g").Algorithm(tune.Grid()).MaxTrials(100) }, []string{
			`spec.parameters[0].feasibleSpace.step: Required value: grid needs a step on Float "lr"`,
			"spec.maxTrialCount: Invalid value: 100: grid has only 14 combinations",
		}},
		"grid too small": {func() *tune.Experiment {
			return tune.New("g").Objective(tune.Minimize("loss")).Param(tune.Float("lr", 0.1, 0.3).Step(0.1), tune.Choice("o", "a", "b")).
				Trial(batchJob("t"), tune.Arg("lr", "--lr"), tune.Env("o", "O")).Algorithm(tune.Grid()).MaxTrials(7).Parallelism(1)
		}, []string{"spec.maxTrialCount: Invalid value: 7: grid has only 6 combinations"}},
		"hyperband": {func() *tune.Experiment {
			return baseExperiment("h").Algorithm(tune.Hyperband("optimizer", 0).Eta(1)).Parallelism(1)
		}, []string{
			`algorithmSettings[1].value: Invalid value: "0": r_l`,
			`algorithmSettings[2].value: Invalid value: "1": eta: must be at least 2`,
			`spec.algorithm.algorithmSettings[resource_name]: Invalid value: "optimizer": the resource must be an Int or Float`,
			`spec.parameters[0].feasibleSpace.distribution: Invalid value: "logUniform": hyperband, parameter "lr": Katib's hyperband service samples uniformly between min and max`,
		}},
		"hyperband parallel": {func() *tune.Experiment {
			return baseExperiment("h").Algorithm(tune.Hyperband("epochs", 27)).Parallelism(2).MaxTrials(30)
		}, []string{
			`spec.algorithm.algorithmSettings[resource_name]: Invalid value: "epochs": must name a parameter`,
			"spec.parallelTrialCount: Invalid value: 2: hyperband with r_l 27 and eta 3 needs at least 27 parallel trials",
			`spec.parameters[0].feasibleSpace.distribution: Invalid value: "logUniform": hyperband, parameter "lr"`,
		}},
		"hyperband missing": {func() *tune.Experiment { return baseExperiment("h").Algorithm(tune.Algorithm{}.Setting("eta", "3")) }, []string{
			`spec.algorithm.algorithmName: Unsupported value: ""`,
		}},
		"pbt": {func() *tune.Experiment {
			return baseExperiment("p").Algorithm(tune.PBT("relative", 4, 1.5).ResampleProbability(2))
		}, []string{
			`algorithmSettings[0].value: Invalid value: "relative": suggestion_trial_dir: must be an absolute path`,
			`algorithmSettings[1].value: Invalid value: "4": n_population: must be at least 5`,
			`algorithmSettings[2].value: Invalid value: "1.5": truncation_threshold: must be in [0, 1]`,
			`algorithmSettings[3].value: Invalid value: "2": resample_probability: Katib v0.19.0's pbt service compares the setting's text with numbers (pkg/suggestion/v1beta1/pbt/service.py:69)`,
			`spec.parameters[0].feasibleSpace.step: Required value: pbt, parameter "lr": Katib's pbt service lists a Float's values with numpy.arange(min, max, float(step)) and fails without a step`,
			`spec.parameters[0].feasibleSpace.distribution: Invalid value: "logUniform": pbt, parameter "lr": Katib's pbt service samples the values min, min+step, ... uniformly`,
		}},
		// Issue 26, item 12: any resample_probability fails every PBT
		// Experiment, a valid one too.
		"pbt resample probability": {func() *tune.Experiment {
			return pbtExperiment("p").Algorithm(tune.PBT("/ckpt", 5, 0.2).ResampleProbability(0.5))
		}, []string{`algorithmSettings[3].value: Invalid value: "0.5": resample_probability: Katib v0.19.0's pbt service`}},
		"pbt raw resample probability": {func() *tune.Experiment {
			return pbtExperiment("p").Algorithm(tune.PBT("/ckpt", 5, 0.2).Setting("resample_probability", "0"))
		}, []string{`algorithmSettings[3].value: Invalid value: "0": resample_probability`}},
		// Issue 26, item 13: the suggestion PVC the webhook mounts exists
		// only under FromVolume, and Push skips the mount.
		"pbt resume": {func() *tune.Experiment { return pbtExperiment("p").Resume(tune.LongRunning) }, []string{
			`spec.resumePolicy: Invalid value: "LongRunning": PBT needs FromVolume: Katib's pod webhook mounts the suggestion's PVC into every trial`,
		}},
		"pbt never resume": {func() *tune.Experiment { return pbtExperiment("p").Resume(tune.NeverResume) }, []string{
			`spec.resumePolicy: Invalid value: "Never": PBT needs FromVolume`,
		}},
		"pbt push": {func() *tune.Experiment { return pbtExperiment("p").Collect(tune.Push()) }, []string{
			`spec.metricsCollectorSpec.collector.kind: Invalid value: "Push": PBT trials share checkpoints through the suggestion's PVC, which Katib's pod webhook does not mount under the Push collector`,
		}},
		// Issue 26, item 14 and section 2 item 5: what each service does
		// with a distribution or a step it does not honour.
		"bayesian space": {func() *tune.Experiment {
			return spaceExperiment("b", tune.Bayesian(), tune.Float("m", -1, 1), tune.Float("lr", 1e-4, 1e-1).Log(),
				tune.Int("n", 1, 64).Log(), tune.Float("d", 0.1, 0.5).Step(0.1), tune.Int("k", 2, 8).Step(2))
		}, []string{
			`spec.parameters[0].feasibleSpace.distribution: Invalid value: "uniform": bayesianoptimization, parameter "m": Katib's skopt service samples every Float log-uniformly (pkg/suggestion/v1beta1/skopt/base_service.py:66-74): declare it with Log() (and a positive min)`,
			`spec.parameters[2].feasibleSpace.distribution: Invalid value: "logUniform": bayesianoptimization, parameter "n": Katib's skopt service samples every Int uniformly`,
			`spec.parameters[3].feasibleSpace.distribution: Invalid value: "uniform": bayesianoptimization, parameter "d"`,
			`spec.parameters[3].feasibleSpace.step: Invalid value: 0.1: bayesianoptimization, parameter "d": Katib's skopt service ignores the step`,
			`spec.parameters[4].feasibleSpace.step: Invalid value: 2: bayesianoptimization, parameter "k": Katib's skopt service ignores the step`,
		}},
		"cmaes log": {func() *tune.Experiment {
			return spaceExperiment("c", tune.CMAES(), tune.Float("lr", 1e-4, 1e-1).Log(), tune.Int("n", 1, 64).Log(), tune.Float("m", 0, 1))
		}, []string{
			`spec.parameters[0].feasibleSpace.distribution: Invalid value: "logUniform": cmaes, parameter "lr": Katib's goptuna service samples uniformly whatever the distribution (pkg/suggestion/v1beta1/goptuna/converter.go:110-165)`,
			`spec.parameters[1].feasibleSpace.distribution: Invalid value: "logUniform": cmaes, parameter "n"`,
		}},
		"grid log int": {func() *tune.Experiment {
			return spaceExperiment("g", tune.Grid(), tune.Int("n", 1, 64).Log())
		}, []string{`spec.parameters[0].feasibleSpace.distribution: Invalid value: "logUniform": grid, parameter "n": grid enumerates min to max by the step, ignoring Log`}},
		"hyperband space": {func() *tune.Experiment {
			return spaceExperiment("h", tune.Hyperband("epochs", 9), tune.Int("epochs", 1, 9), tune.Float("d", 0, 1).Step(0.25),
				tune.Discrete("b", 16, 0.5)).Parallelism(9)
		}, []string{
			`spec.parameters[1].feasibleSpace.step: Invalid value: 0.25: hyperband, parameter "d": Katib's hyperband service ignores the step`,
			`spec.parameters[2].feasibleSpace.list[1]: Invalid value: 0.5: hyperband, parameter "b": Katib's hyperband service reads Discrete values with int()`,
		}},
		"hyperopt step": {func() *tune.Experiment {
			return spaceExperiment("t", tune.TPE(), tune.Float("d", 0.15, 0.95).Step(0.1), tune.Float("ok", 0.1, 0.5).Step(0.1),
				tune.Int("k", 1, 9).Step(2), tune.Int("n", 1, 64).Log())
		}, []string{
			`spec.parameters[0].feasibleSpace.step: Invalid value: 0.1: tpe, parameter "d": Katib's hyperopt service draws round(uniform(min, max)/step)·step (hp.quniform, pkg/suggestion/v1beta1/hyperopt/base_service.py:71-77), multiples of the step rather than min, min+step, ...: min (0.15) and max (0.95) must be multiples of it`,
			`spec.parameters[2].feasibleSpace.step: Invalid value: 2: tpe, parameter "k"`,
			`spec.parameters[3].feasibleSpace.distribution: Invalid value: "logUniform": tpe, parameter "n": Katib's hyperopt service draws a log-scaled Int as int(loguniform(min, max))`,
		}},
		"early stopping": {func() *tune.Experiment {
			return baseExperiment("e").EarlyStop(tune.MedianStop().MinTrials(0).StartStep(0))
		}, []string{
			`spec.earlyStopping.algorithmSettings[0].value: Invalid value: "0": min_trials_required: must be at least 1`,
			`spec.earlyStopping.algorithmSettings[1].value: Invalid value: "0": start_step: must be at least 1`,
		}},
		"unknown early stopping": {func() *tune.Experiment { return baseExperiment("e").EarlyStop(tune.EarlyStopping{}) }, []string{
			`spec.earlyStopping.algorithmName: Unsupported value: ""`,
		}},
		"collectors": {func() *tune.Experiment {
			return baseExperiment("c").Collect(tune.File("relative").JSON().Filter(`(a)(b)`))
		}, []string{
			`spec.metricsCollectorSpec.source.fileSystemPath.path: Invalid value: "relative": must be an absolute path`,
			"spec.metricsCollectorSpec.source.filter: Invalid value",
		}},
		"collector formats": {func() *tune.Experiment { return baseExperiment("c").Collect(tune.StdOut(`(a`, `(\w+)=`)) }, []string{
			"spec.metricsCollectorSpec.source.filter.metricsFormat[0]: Invalid value: \"(a\": error parsing regexp",
			`spec.metricsCollectorSpec.source.filter.metricsFormat[1]: Invalid value: "(\\w+)=": needs two groups`,
		}},
		"tfevent": {func() *tune.Experiment {
			return baseExperiment("c").Collect(tune.TensorFlowEvent("tf").Filter(`(a)(b)`))
		}, []string{
			`spec.metricsCollectorSpec.source.fileSystemPath.path: Invalid value: "tf"`,
			`spec.metricsCollectorSpec.source.filter: Invalid value: ["(a)(b)"]: the TensorFlowEvent collector takes no filter`,
		}},
		// Issue 26, item 11.
		"prometheus": {func() *tune.Experiment { return baseExperiment("c").Collect(tune.Prometheus(8080, "/metrics")) }, []string{
			`spec.metricsCollectorSpec.collector.kind: Invalid value: "PrometheusMetric": Katib v0.19.0 ships no Prometheus metrics collector and its default katib-config lists none, so the experiment webhook refuses this kind; use one of ["StdOut" "File" "TensorFlowEvent" "Push" "Custom"]`,
		}},
		"custom": {func() *tune.Experiment {
			return baseExperiment("c").Collect(tune.Custom(corev1.Container{}).Read("x", false))
		}, []string{
			"spec.metricsCollectorSpec.collector.customCollector: Required value",
			`spec.metricsCollectorSpec.source.fileSystemPath.path: Invalid value: "x"`,
		}},
		"placements": {func() *tune.Experiment {
			return tune.New("pl").Objective(tune.Minimize("loss")).Param(tune.Float("lr", 0.01, 0.1), tune.Float("unused", 0, 1)).
				Trial(batchJob("t"), tune.Arg("lr", "--lr"), tune.Arg("nope", "--nope"), tune.Env("lr", "1BAD"), tune.Placement{})
		}, []string{
			`trial.placements[1].param: Invalid value: "nope": is not a parameter`,
			`trial.placements[2].env: Invalid value: "1BAD": must be a C identifier`,
			`trial.placements[3].param: Invalid value: "": is not a parameter`,
			`spec.parameters[1].name: Invalid value: "unused": reaches no trial`,
		}},
		"stray placeholder": {func() *tune.Experiment {
			return tune.New("pl").Objective(tune.Minimize("loss")).Param(tune.Float("lr", 0.01, 0.1)).
				Trial(pytorch("t").Torchrun("m.py", tune.Ref("lr"), tune.Ref("momentum")))
		}, []string{`spec.trialTemplate.trialSpec: Invalid value: "${trialParameters.momentum}": the trial references "momentum", which is not a parameter`}},
		"primary container": {func() *tune.Experiment { return baseExperiment("pc").PrimaryContainer("missing") }, []string{
			`spec.trialTemplate.primaryContainerName: Invalid value: "missing": Job has no container of that name (it has ["train"])`,
			`trial.placements[0].flag: Invalid value: "--lr": no primary container "missing" to take the argument`,
			`trial.placements[1].flag: Invalid value: "--layers": no primary container "missing"`,
			`spec.parameters[0].name: Invalid value: "lr": reaches no trial`,
			`spec.parameters[1].name: Invalid value: "layers": reaches no trial`,
		}},
		"half conditions": {func() *tune.Experiment { return baseExperiment("hc").Conditions("status.done", "") }, []string{
			"spec.trialTemplate.failureCondition: Required value: Conditions needs both",
		}},
		"invalid trial workload": {func() *tune.Experiment {
			return tune.New("bad").Objective(tune.Minimize("loss")).Param(tune.Float("lr", 0.01, 0.1)).Trial(pytorch("Bad_Name"), tune.Arg("lr", "--lr"))
		}, []string{"spec.trialTemplate.trialSpec: Invalid value: \"\": the trial workload is invalid"}},
		"trial namespace": {func() *tune.Experiment {
			return tune.New("ns").Namespace("a").Objective(tune.Minimize("loss")).Param(tune.Float("lr", 0.01, 0.1)).
				Trial(pytorch("t").Namespace("b"), tune.Arg("lr", "--lr"))
		}, []string{`spec.trialTemplate.trialSpec[0].metadata.namespace: Invalid value: "b"`}},
		"two trial objects": {func() *tune.Experiment {
			objs, _ := batchJob("a").Objects()
			objs2, _ := pytorch("b").Objects()
			return tune.New("two").Objective(tune.Minimize("loss")).Param(tune.Float("lr", 0.01, 0.1)).
				Trial(cube.Objects(append(objs, objs2...)...), tune.Arg("lr", "--lr"))
		}, []string{"spec.trialTemplate.trialSpec[1]: Invalid value: \"PyTorchJob b\": the trial workload renders PyTorchJob b besides Job a"}},
		"no trial object": {func() *tune.Experiment {
			return tune.New("none").Objective(tune.Minimize("loss")).Param(tune.Float("lr", 0.01, 0.1)).Trial(cube.Objects())
		}, []string{"spec.trialTemplate.trialSpec: Required value: the trial workload renders no trial object"}},
		"config map with placeholder": {func() *tune.Experiment {
			cm := &corev1.ConfigMap{Data: map[string]string{"lr": tune.Ref("lr")}}
			cm.SetName("cfg")
			cm.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
			objs, _ := batchJob("a").Objects()
			return tune.New("cm").Objective(tune.Minimize("loss")).Param(tune.Float("lr", 0.01, 0.1)).
				Trial(cube.Objects(append(objs, cm)...), tune.Arg("lr", "--lr"))
		}, []string{`spec.trialTemplate.trialSpec: Invalid value: "ConfigMap cfg": Katib substitutes parameters only in the trial object`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := tc.e().Build()
			require.Error(t, err)
			errs := errorStrings(t, err)
			assert.Empty(t, missing(errs, tc.want...), "got %q", errs)
			assert.Len(t, errs, len(tc.want), "got %q", errs)
			_, err = tc.e().Objects()
			assert.Error(t, err)
		})
	}
}

// TestIntegerText: an Int's bounds and step, and whole Discrete values,
// render as integer text. formatFloat's "2e+06" is refused by goptuna's
// strconv.Atoi and by int() in optuna, skopt and hyperband.
func TestIntegerText(t *testing.T) {
	exp, err := spaceExperiment("i", tune.MultivariateTPE(), tune.Int("steps", 1000000, 4000000).Step(1000000),
		tune.Discrete("tokens", 1e6, 2.5e6, 0.5), tune.Float("lr", 1e-5, 2e6)).Build()
	require.NoError(t, err)
	ps := exp.Spec.Parameters
	assert.Equal(t, []string{"1000000", "4000000", "1000000"}, []string{ps[0].FeasibleSpace.Min, ps[0].FeasibleSpace.Max, ps[0].FeasibleSpace.Step})
	assert.Equal(t, []string{"1000000", "2500000", "0.5"}, ps[1].FeasibleSpace.List)
	assert.Equal(t, []string{"1e-05", "2e+06"}, []string{ps[2].FeasibleSpace.Min, ps[2].FeasibleSpace.Max}, "Floats stay as Python's float() and Go's ParseFloat read them")
}

// TestPBTRendersFromVolume: PBT without Resume renders FromVolume, the
// policy under which the suggestion's PVC exists; an explicit FromVolume is
// kept.
func TestPBTRendersFromVolume(t *testing.T) {
	exp, err := pbtExperiment("p").Build()
	require.NoError(t, err)
	assert.Equal(t, tune.FromVolume, exp.Spec.ResumePolicy)
	exp, err = pbtExperiment("p").Resume(tune.FromVolume).Build()
	require.NoError(t, err)
	assert.Equal(t, tune.FromVolume, exp.Spec.ResumePolicy)
	exp, err = baseExperiment("r").Build()
	require.NoError(t, err)
	assert.Empty(t, exp.Spec.ResumePolicy, "other algorithms keep Katib's default")
}

// TestHostileInput: input a new user could give that was accepted or
// panicked; each is refused with the field named, or is a no-op on nil.
func TestHostileInput(t *testing.T) {
	var nilExp *tune.Experiment
	assert.Nil(t, nilExp.Param(tune.Float("x", 0, 1)), "Param on a nil experiment")
	// Progress.Optimal is nil before any trial reported.
	_, err := tune.ProgressOf(&katibv1beta1.Experiment{}).Optimal.Float("lr")
	assert.EqualError(t, err, `no optimal trial yet: parameter "lr"`)
	_, err = tune.ProgressOf(nil).Optimal.Int("layers")
	assert.EqualError(t, err, `no optimal trial yet: parameter "layers"`)

	// 2^996 parallel trials wrapped to a negative int32 and passed.
	_, err = spaceExperiment("h", tune.Hyperband("epochs", 1e300).Eta(2), tune.Int("epochs", 1, 9)).Parallelism(100).Build()
	assert.Equal(t, []string{
		"spec.parallelTrialCount: Invalid value: 100: hyperband with r_l 1e+300 and eta 2 needs at least 6.696928794914171e+299 parallel trials",
	}, errorStrings(t, err))

	// Paths that hide where they land.
	_, err = pbtExperiment("p").Algorithm(tune.PBT("/var/log/../../etc", 5, 0.2)).Collect(tune.File("/tmp/./m.log")).Build()
	assert.Equal(t, []string{
		`spec.algorithm.algorithmSettings[0].value: Invalid value: "/var/log/../../etc": suggestion_trial_dir: must be a clean path (it is /etc)`,
		`spec.metricsCollectorSpec.source.fileSystemPath.path: Invalid value: "/tmp/./m.log": must be a clean path (it is /tmp/m.log)`,
	}, errorStrings(t, err))
	// Katib replaces placeholders in the trial's JSON text unescaped: a
	// quote added a field to the trial spec.
	_, err = spaceExperiment("c", tune.Random(), tune.Choice("opt", `adam","privileged":"true`, `a\b`, "tab\there", "${trialParameters.opt}", "sgd")).Build()
	assert.Equal(t, []string{
		`spec.parameters[0].feasibleSpace.list[0]: Invalid value: "adam\",\"privileged\":\"true": must not hold '"', '\' or control characters: Katib substitutes values into the trial's JSON unescaped`,
		`spec.parameters[0].feasibleSpace.list[1]: Invalid value: "a\\b": must not hold '"', '\' or control characters: Katib substitutes values into the trial's JSON unescaped`,
		`spec.parameters[0].feasibleSpace.list[2]: Invalid value: "tab\there": must not hold '"', '\' or control characters: Katib substitutes values into the trial's JSON unescaped`,
		`spec.parameters[0].feasibleSpace.list[3]: Invalid value: "${trialParameters.opt}": must not hold a ${trialParameters.x} placeholder`,
	}, errorStrings(t, err))

	// An Int beyond float64's exact integers rendered a rounded bound.
	_, err = spaceExperiment("i", tune.Random(), tune.Int("n", 0, 1<<60+1)).Build()
	assert.Equal(t, []string{
		"spec.parameters[0].feasibleSpace.max: Invalid value: 1152921504606846976: must be within ±2^53 (9007199254740992)",
	}, errorStrings(t, err))

	_, err = pbtExperiment("p").Algorithm(tune.PBT("/", 5, 0.2)).Collect(tune.TensorFlowEvent("/var/log/tf/")).Build()
	assert.Equal(t, []string{
		`spec.algorithm.algorithmSettings[0].value: Invalid value: "/": suggestion_trial_dir: must not be the root directory`,
	}, errorStrings(t, err))
}
