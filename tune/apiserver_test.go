package tune_test

// These tests apply every rendered Experiment to a real kube-apiserver with
// Katib's CRDs installed (internal/testsupport/testenv), with strict field validation,
// and run Katib's own experiment validator over it as a backstop. No Katib
// controller runs here.

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	configv1beta1 "github.com/kubeflow/katib/pkg/apis/config/v1beta1"
	common "github.com/kubeflow/katib/pkg/apis/controller/common/v1beta1"
	katibv1beta1 "github.com/kubeflow/katib/pkg/apis/controller/experiments/v1beta1"
	"github.com/kubeflow/katib/pkg/controller.v1beta1/experiment/manifest"
	"github.com/kubeflow/katib/pkg/webhook/v1beta1/experiment/validator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/contract"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/train"
	"github.com/cubestudio/cube/tune"
)

// katibConfig stands in for the katib-config ConfigMap that Katib's
// validator reads through its manifest generator: every algorithm,
// early-stopping algorithm and metrics collector of Katib v0.19.0's
// katib-config.yaml has an image, and no other (the collectors are the
// contract's katib-config.metricsCollectors). Everything else is Katib's
// own code.
type katibConfig struct{ manifest.Generator }

func (katibConfig) GetSuggestionConfigData(name string) (configv1beta1.SuggestionConfig, error) {
	switch name {
	case "random", "tpe", "grid", "hyperband", "bayesianoptimization", "cmaes", "sobol", "multivariate-tpe", "enas", "darts", "pbt":
		return configv1beta1.SuggestionConfig{AlgorithmName: name, Container: corev1.Container{Image: "suggestion-" + name}}, nil
	}
	return configv1beta1.SuggestionConfig{}, fmt.Errorf("no suggestion for %q", name)
}

func (katibConfig) GetEarlyStoppingConfigData(name string) (configv1beta1.EarlyStoppingConfig, error) {
	if name == "medianstop" {
		return configv1beta1.EarlyStoppingConfig{AlgorithmName: name, Image: "earlystopping-medianstop"}, nil
	}
	return configv1beta1.EarlyStoppingConfig{}, fmt.Errorf("no early stopping for %q", name)
}

func (katibConfig) GetMetricsCollectorConfigData(kind common.CollectorKind) (configv1beta1.MetricsCollectorConfig, error) {
	f, ok := katibContract.Fact(contract.Set, "katib-config.metricsCollectors")
	if !ok || !slices.Contains(strings.Split(f.Value, ","), string(kind)) {
		return configv1beta1.MetricsCollectorConfig{}, fmt.Errorf("failed to find metrics collector config for kind: %s in ConfigMap: katib-config", kind)
	}
	return configv1beta1.MetricsCollectorConfig{CollectorKind: string(kind), Image: "collector-" + string(kind)}, nil
}

// katibValidate runs Katib's validating webhook logic on exp after Katib's
// defaulting (the mutating webhook's SetDefault), as the webhook would.
func katibValidate(t *testing.T, exp *katibv1beta1.Experiment) {
	t.Helper()
	in := exp.DeepCopy()
	in.SetDefault()
	v := validator.New(katibConfig{manifest.New(nil)})
	assert.Empty(t, v.ValidateExperiment(in, nil), "Katib's validator")
}

// algorithms is every algorithm Katib ships, each with settings, over a
// space it accepts.
func algorithms() map[string]func(e *tune.Experiment) *tune.Experiment {
	space := func(e *tune.Experiment) *tune.Experiment {
		return e.Param(tune.Float("lr", 1e-4, 1e-1).Log(), tune.Int("layers", 2, 8), tune.Choice("optimizer", "adam", "sgd"))
	}
	uniform := func(e *tune.Experiment) *tune.Experiment {
		return e.Param(tune.Float("lr", 1e-4, 1e-1), tune.Int("layers", 2, 8).Step(2), tune.Choice("optimizer", "adam", "sgd"))
	}
	return map[string]func(e *tune.Experiment) *tune.Experiment{
		"random": func(e *tune.Experiment) *tune.Experiment { return space(e).Algorithm(tune.Random().Seed(3)) },
		"tpe": func(e *tune.Experiment) *tune.Experiment {
			return space(e).Algorithm(tune.TPE().Seed(1).Gamma(0.25).PriorWeight(1).EICandidates(24))
		},
		"grid": func(e *tune.Experiment) *tune.Experiment {
			return e.Param(tune.Float("lr", 0.01, 0.05).Step(0.01), tune.Int("layers", 2, 8).Step(2), tune.Discrete("batch", 32, 64)).
				Algorithm(tune.Grid().Seed(2))
		},
		"multivariate-tpe": func(e *tune.Experiment) *tune.Experiment {
			return space(e).Algorithm(tune.MultivariateTPE().Seed(1).StartupTrials(5).EICandidates(24))
		},
		// goptuna samples uniformly whatever the distribution.
		"cmaes": func(e *tune.Experiment) *tune.Experiment {
			return uniform(e).Algorithm(tune.CMAES().Seed(4).Sigma(0.3).RestartStrategy("ipop"))
		},
		"sobol": func(e *tune.Experiment) *tune.Experiment { return uniform(e).Algorithm(tune.Sobol()) },
		"bayesianoptimization": func(e *tune.Experiment) *tune.Experiment {
			return space(e).Algorithm(tune.Bayesian().Seed(5).BaseEstimator("GP").InitialPoints(4).AcquisitionFunc("EI").AcquisitionOptimizer("sampling"))
		},
		"hyperband": func(e *tune.Experiment) *tune.Experiment {
			return e.Param(tune.Float("lr", 0.01, 0.05), tune.Int("epochs", 1, 1)).
				Algorithm(tune.Hyperband("epochs", 3).Eta(3))
		},
		// PBT needs a step on every Float and FromVolume.
		"pbt": func(e *tune.Experiment) *tune.Experiment {
			return e.Param(tune.Float("lr", 0.0001, 0.02).Step(0.0001), tune.Discrete("batch", 32, 64)).
				Algorithm(tune.PBT("/var/log/katib/checkpoints/", 10, 0.2)).Resume(tune.FromVolume)
		},
	}
}

// trials is a couple of trial kinds, each with the parameters placed.
func trials() map[string]func(name string, e *tune.Experiment) *tune.Experiment {
	place := func(e *tune.Experiment) []tune.Placement {
		var out []tune.Placement
		for i, p := range tune.SpaceOf(e) {
			if i%2 == 0 {
				out = append(out, tune.Arg(p.Name(), "--"+p.Name()))
			} else {
				out = append(out, tune.Env(p.Name(), fmt.Sprintf("PARAM_%d", i)))
			}
		}
		return out
	}
	return map[string]func(string, *tune.Experiment) *tune.Experiment{
		"job": func(name string, e *tune.Experiment) *tune.Experiment {
			return e.Trial(batchJob(name), place(e)...)
		},
		"pytorchjob": func(name string, e *tune.Experiment) *tune.Experiment {
			return e.Trial(pytorch(name), place(e)...)
		},
		"tfjob": func(name string, e *tune.Experiment) *tune.Experiment {
			return e.Trial(train.TensorFlow(name).Image("tensorflow/tensorflow:2.16.1").Command("python", "mnist.py").Workers(2), place(e)...)
		},
		"mpijob": func(name string, e *tune.Experiment) *tune.Experiment {
			return e.Trial(train.MPI(name).Image("horovod/horovod:0.28.1").Command("mpirun", "python", "train.py").Workers(2), place(e)...)
		},
	}
}

// TestAppliedStrictly applies every algorithm over every trial kind, and
// checks what the server stored.
func TestAppliedStrictly(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	algs, kinds := algorithms(), trials()
	for algName, alg := range algs {
		for kindName, kind := range kinds {
			name := fmt.Sprintf("%s-%s", algName, kindName)
			if len(name) > 40 {
				name = name[:40]
			}
			t.Run(name, func(t *testing.T) {
				e := tune.New(name).Namespace(ns).
					Objective(tune.Maximize("accuracy").Also("loss")).
					EarlyStop(tune.MedianStop().MinTrials(2).StartStep(2)).
					Parallelism(3).MaxTrials(6).MaxFailedTrials(1).Resume(tune.LongRunning)
				e = kind(name+"-trial", alg(e))
				objs, err := e.Objects()
				require.NoError(t, err)
				require.Len(t, objs, 1)
				exp := objs[0].(*katibv1beta1.Experiment)
				katibValidate(t, exp)

				rendered, err := cube.ToUnstructured(exp)
				require.NoError(t, err)
				u := rendered.DeepCopy()
				require.NoError(t, env.ApplyStrict(t.Context(), u, cube.ManagedBy))
				// What was rendered is what was stored.
				assert.Equal(t, rendered.Object["spec"], u.Object["spec"])

				stored := &katibv1beta1.Experiment{}
				require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, stored))
				assert.Equal(t, algName, stored.Spec.Algorithm.AlgorithmName)
				assert.Equal(t, exp.Spec.TrialTemplate.PrimaryContainerName, stored.Spec.TrialTemplate.PrimaryContainerName)
				assert.Len(t, stored.Spec.TrialTemplate.TrialParameters, len(tune.SpaceOf(e)))
			})
		}
	}
}

// collectors is every metrics collector an Experiment may use.
func collectors() map[string]tune.Collector {
	return map[string]tune.Collector{
		"stdout":    tune.StdOut(`([\w|-]+)\s*=\s*([+-]?\d*(\.\d+)?([Ee][+-]?\d+)?)`),
		"file-text": tune.File("/var/log/katib/metrics.log").Filter(`(\w+):\s*(\d+\.\d+)`),
		"file-json": tune.File("/var/log/katib/metrics.json").JSON(),
		"tfevent":   tune.TensorFlowEvent("/var/log/katib/tfevent/"),
		"push":      tune.Push(),
		"custom": tune.Custom(corev1.Container{Name: "collector", Image: "registry.example.com/collector:1"}).
			Read("/var/log/metrics", true),
	}
}

// TestCollectorsAppliedStrictly applies every metrics collector.
func TestCollectorsAppliedStrictly(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	for name, c := range collectors() {
		t.Run(name, func(t *testing.T) {
			e := baseExperiment("mc-" + name).Namespace(ns).Collect(c)
			exp, err := e.Build()
			require.NoError(t, err)
			katibValidate(t, exp)
			u, err := cube.ToUnstructured(exp)
			require.NoError(t, err)
			want := u.DeepCopy()
			require.NoError(t, env.ApplyStrict(t.Context(), u, cube.ManagedBy))
			assert.Equal(t, want.Object["spec"].(map[string]any)["metricsCollectorSpec"], u.Object["spec"].(map[string]any)["metricsCollectorSpec"])
		})
	}
}

// TestSharedConfigMapApplied applies a DeepSpeed trial: its ds_config.json
// ConfigMap is shared by the trials and applied beside the Experiment.
func TestSharedConfigMapApplied(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ds := train.DeepSpeed("ds").Image("deepspeed/deepspeed:0.14").Torchrun("train.py").Workers(1)
	e := tune.New("ds-tune").Namespace(ns).Objective(tune.Minimize("loss")).
		Param(tune.Float("lr", 1e-5, 1e-3).Log()).
		Trial(ds, tune.Arg("lr", "--lr"))
	objs, err := e.Objects()
	require.NoError(t, err)
	require.Len(t, objs, 2)
	assert.Equal(t, "ConfigMap", objs[0].GetObjectKind().GroupVersionKind().Kind)
	assert.Equal(t, ns, objs[0].GetNamespace())
	for _, o := range objs {
		u, err := cube.ToUnstructured(o)
		require.NoError(t, err)
		require.NoError(t, env.ApplyStrict(t.Context(), u, cube.ManagedBy))
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(katibv1beta1.SchemeGroupVersion.WithKind("Experiment"))
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "ds-tune"}, got))
	kind, _, _ := unstructured.NestedString(got.Object, "spec", "trialTemplate", "trialSpec", "kind")
	assert.Equal(t, "PyTorchJob", kind)
}

// TestKatibValidatorBackstopFails shows that the backstop can fail: Katib's
// validator rejects what cube would never render.
func TestKatibValidatorBackstopFails(t *testing.T) {
	exp, err := baseExperiment("backstop").Build()
	require.NoError(t, err)
	exp.Spec.TrialTemplate.PrimaryContainerName = ""
	exp.Spec.TrialTemplate.TrialParameters = exp.Spec.TrialTemplate.TrialParameters[1:]
	in := exp.DeepCopy()
	in.SetDefault()
	errs := validator.New(katibConfig{manifest.New(nil)}).ValidateExperiment(in, nil)
	require.Len(t, errs, 2, "%v", errs)
	assert.Equal(t, "spec.trialTemplate.primaryContainerName", errs[0].Field)
	assert.Contains(t, errs[1].Detail, "not found in spec.trialParameters")
}

// TestWaitFollowsKatib applies an experiment with cube's client, writes the
// status Katib's controller would write, and follows it: progress, the
// optimal trial, and Release.Wait ending on Succeeded.
func TestWaitFollowsKatib(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	c := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.Clientset(env.Clientset), cube.Kinds(tune.Kinds()...))
	rel, err := c.Apply(t.Context(), baseExperiment("follow"))
	require.NoError(t, err)

	get := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(katibv1beta1.SchemeGroupVersion.WithKind("Experiment"))
		require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "follow"}, u))
		return u
	}
	setStatus := func(status katibv1beta1.ExperimentStatus) {
		u := get()
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
		require.NoError(t, err)
		u.Object["status"] = content
		require.NoError(t, env.Client.Status().Update(t.Context(), u))
	}
	assert.Equal(t, cube.InProgress, cube.ReadStatus(get(), tune.Kinds()...).Phase)
	assert.Equal(t, cube.Unknown, cube.ReadStatus(get()).Phase, "without tune.Kinds nothing reads an Experiment")

	now := metav1.Now()
	running := katibv1beta1.ExperimentStatus{
		Conditions: []katibv1beta1.ExperimentCondition{
			{Type: katibv1beta1.ExperimentCreated, Status: corev1.ConditionTrue, Reason: "ExperimentCreated", LastUpdateTime: now, LastTransitionTime: now},
			{Type: katibv1beta1.ExperimentRunning, Status: corev1.ConditionTrue, Reason: "ExperimentRunning", LastUpdateTime: now, LastTransitionTime: now},
		},
		Trials: 5, TrialsRunning: 2, TrialsSucceeded: 2, TrialsEarlyStopped: 1,
		CurrentOptimalTrial: katibv1beta1.OptimalTrial{
			BestTrialName:        "follow-abc",
			ParameterAssignments: []common.ParameterAssignment{{Name: "lr", Value: "0.003"}, {Name: "layers", Value: "4"}, {Name: "optimizer", Value: "adam"}},
			Observation:          common.Observation{Metrics: []common.Metric{{Name: "accuracy", Min: "0.5", Max: "0.93", Latest: "0.91"}, {Name: "loss", Min: "0.2", Max: "0.9", Latest: "0.25"}}},
		},
	}
	setStatus(running)
	st := cube.ReadStatus(get(), tune.Kinds()...)
	assert.Equal(t, cube.InProgress, st.Phase)
	assert.Equal(t, "Running", st.Reason)
	assert.Equal(t, "5 trials: 2 running, 2 succeeded, 0 failed, 1 early-stopped", st.Message)

	stored := &katibv1beta1.Experiment{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(get().Object, stored))
	p := tune.ProgressOf(stored)
	require.NotNil(t, p.Optimal)
	assert.Equal(t, "follow-abc", p.Optimal.Trial)
	assert.Equal(t, map[string]float64{"accuracy": 0.93, "loss": 0.9}, p.Optimal.Metrics, "maximize reads max, as Katib's default strategy")
	lr, err := p.Optimal.Float("lr")
	require.NoError(t, err)
	assert.Equal(t, 0.003, lr)
	layers, err := p.Optimal.Int("layers")
	require.NoError(t, err)
	assert.Equal(t, 4, layers)
	_, err = p.Optimal.Float("momentum")
	assert.ErrorContains(t, err, `optimal trial follow-abc has no parameter "momentum"`)

	done := running
	done.Conditions = append(done.Conditions, katibv1beta1.ExperimentCondition{
		Type: katibv1beta1.ExperimentSucceeded, Status: corev1.ConditionTrue, Reason: "ExperimentGoalReached", LastUpdateTime: now, LastTransitionTime: now,
	})
	done.TrialsRunning, done.TrialsSucceeded = 0, 4
	setStatus(done)
	final, err := rel.Wait(t.Context(), cube.Succeeded)
	require.NoError(t, err)
	assert.Equal(t, cube.Succeeded, final.Phase)
	assert.Equal(t, "ExperimentGoalReached", final.Objects[0].Reason)

	failed := done
	failed.Conditions = []katibv1beta1.ExperimentCondition{{Type: katibv1beta1.ExperimentFailed, Status: corev1.ConditionTrue, Reason: "ExperimentMaxFailedTrialsReached", Message: "3 trials failed", LastUpdateTime: now, LastTransitionTime: now}}
	setStatus(failed)
	st = cube.ReadStatus(get(), tune.Kinds()...)
	assert.Equal(t, cube.ObjectStatus{Ref: st.Ref, Phase: cube.Failed, Reason: "ExperimentMaxFailedTrialsReached", Message: "3 trials failed"}, st)
}
