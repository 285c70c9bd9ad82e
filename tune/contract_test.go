package tune_test

// These tests check every Experiment cube renders against Katib v0.19.0's
// contract (testdata/contracts/katib.tsv): the settings each suggestion
// service reads, the distributions and steps it honours, the collectors
// and resume policy the webhooks need, and what the default images hold.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	common "github.com/kubeflow/katib/pkg/apis/controller/common/v1beta1"
	katibv1beta1 "github.com/kubeflow/katib/pkg/apis/controller/experiments/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/internal/testsupport/contract"
	"github.com/cubestudio/cube/tune"
)

var katibContract = func() *contract.Contract {
	c, err := contract.Load("testdata/contracts/katib.tsv")
	if err != nil {
		panic(err)
	}
	return c
}()

// experimentConfig flattens what the suggestion, early-stopping and
// collector machinery read of an Experiment (the contract's experiment
// configuration).
func experimentConfig(exp *katibv1beta1.Experiment) map[string]string {
	alg := exp.Spec.Algorithm.AlgorithmName
	cfg := map[string]string{"algorithm": alg}
	for _, s := range exp.Spec.Algorithm.AlgorithmSettings {
		cfg[alg+"."+s.Name] = s.Value
	}
	if exp.Spec.ResumePolicy != "" {
		cfg["resumePolicy"] = string(exp.Spec.ResumePolicy)
	}
	kind := common.StdOutCollector
	if mc := exp.Spec.MetricsCollectorSpec; mc != nil && mc.Collector != nil && mc.Collector.Kind != "" {
		kind = mc.Collector.Kind
	}
	cfg["metricsCollector.kind"] = string(kind)
	if es := exp.Spec.EarlyStopping; es != nil {
		cfg["earlyStopping"] = es.AlgorithmName
		for _, s := range es.AlgorithmSettings {
			cfg[es.AlgorithmName+"."+s.Name] = s.Value
		}
	}
	return cfg
}

// parameterConfig flattens one parameter as the algorithm's service reads
// it (the contract's parameter configuration).
func parameterConfig(alg string, p katibv1beta1.ParameterSpec) map[string]string {
	typ, fs := string(p.ParameterType), p.FeasibleSpace
	cfg := map[string]string{}
	switch p.ParameterType {
	case katibv1beta1.ParameterTypeDouble, katibv1beta1.ParameterTypeInt:
		dist := string(fs.Distribution)
		if dist == "" {
			dist = string(katibv1beta1.DistributionUniform)
		}
		cfg[alg+"."+typ] = dist
		if fs.Step != "" {
			cfg[alg+"."+typ+".step"] = "offset"
			if onSteps(fs.Min, fs.Step) && onSteps(fs.Max, fs.Step) {
				cfg[alg+"."+typ+".step"] = "aligned"
			}
		}
		if p.ParameterType == katibv1beta1.ParameterTypeInt {
			cfg[alg+".int.text"] = "decimal"
			for _, v := range []string{fs.Min, fs.Max, fs.Step} {
				if _, err := strconv.Atoi(v); v != "" && err != nil {
					cfg[alg+".int.text"] = "exponent"
				}
			}
		}
	default:
		cfg[alg+"."+typ] = "list"
		if p.ParameterType == katibv1beta1.ParameterTypeDiscrete {
			cfg[alg+".discrete.values"] = "integers"
			for _, v := range fs.List {
				if _, err := strconv.Atoi(v); err != nil {
					cfg[alg+".discrete.values"] = "other"
				}
			}
		}
	}
	return cfg
}

// onSteps reports whether the number x is a whole multiple of step.
func onSteps(x, step string) bool {
	xv, err1 := strconv.ParseFloat(x, 64)
	sv, err2 := strconv.ParseFloat(step, 64)
	if err1 != nil || err2 != nil || sv == 0 {
		return false
	}
	r := xv / sv
	return math.Abs(r-math.Round(r)) <= 1e-9*math.Max(1, math.Abs(r))
}

// checkKatibContract checks one rendered Experiment against the contract:
// its settings and policies, every parameter, and the images the default
// install runs it in.
func checkKatibContract(what string, exp *katibv1beta1.Experiment) error {
	c := katibContract
	cfg := experimentConfig(exp)
	errs := []error{c.CheckKeys(what, cfg)}
	for _, p := range exp.Spec.Parameters {
		errs = append(errs, c.CheckKeys(what+" parameter "+p.Name, parameterConfig(cfg["algorithm"], p)))
	}
	images := []struct{ image, key string }{
		{"suggestion-image." + cfg["algorithm"], "algorithm"},
		{"collector-image." + cfg["metricsCollector.kind"], "metricsCollector.kind"},
		{"earlystopping-image." + cfg["earlyStopping"], "earlyStopping"},
	}
	for _, im := range images {
		f, ok := c.Fact(contract.Key, im.image)
		if !ok {
			continue // Push and Custom run no image of Katib's; no early stopping
		}
		errs = append(errs, c.CheckImage(what, f.Value, map[string]string{im.key: cfg[im.key]}))
	}
	var out []string
	for _, e := range errs {
		if e != nil {
			out = append(out, e.Error())
		}
	}
	if len(out) > 0 {
		return fmt.Errorf("%s", strings.Join(out, "\n"))
	}
	return nil
}

// renderedExperiments is every Experiment the tests render: each algorithm
// over each trial kind as TestAppliedStrictly applies them, each collector,
// and the builders' valid cases.
func renderedExperiments(t *testing.T) map[string]*tune.Experiment {
	out := map[string]*tune.Experiment{}
	for algName, alg := range algorithms() {
		for kindName, kind := range trials() {
			name := algName + "-" + kindName
			e := tune.New("c").Objective(tune.Maximize("accuracy").Also("loss")).
				EarlyStop(tune.MedianStop().MinTrials(2).StartStep(2)).
				Parallelism(3).MaxTrials(6).MaxFailedTrials(1).Resume(tune.LongRunning)
			out[name] = kind("trial", alg(e))
		}
	}
	for name, c := range collectors() {
		out["collector "+name] = baseExperiment("c").Collect(c)
	}
	out["base"] = baseExperiment("b")
	out["pbt"] = pbtExperiment("p")
	out["integers"] = spaceExperiment("i", tune.MultivariateTPE(), tune.Int("steps", 1000000, 4000000).Step(1000000),
		tune.Discrete("tokens", 1e6, 2.5e6, 0.5), tune.Float("lr", 1e-5, 2e6))
	require.NotEmpty(t, out)
	return out
}

// TestContractExperiments checks every rendered Experiment against Katib's
// contract.
func TestContractExperiments(t *testing.T) {
	for name, e := range renderedExperiments(t) {
		t.Run(name, func(t *testing.T) {
			exp, err := e.Build()
			require.NoError(t, err)
			assert.NoError(t, checkKatibContract(name, exp))
		})
	}
}

// TestContractCatchesIssue26 shows the contract refusing what cube rendered
// before issue 26 (items 11-14 and section 2 item 5), each defect on an
// otherwise valid Experiment.
func TestContractCatchesIssue26(t *testing.T) {
	valid := func(e *tune.Experiment) *katibv1beta1.Experiment {
		exp, err := e.Build()
		require.NoError(t, err)
		require.NoError(t, checkKatibContract("valid", exp))
		return exp
	}
	cases := map[string]struct {
		exp  *katibv1beta1.Experiment
		want string
	}{}
	prom := valid(baseExperiment("b"))
	prom.Spec.MetricsCollectorSpec.Collector.Kind = common.PrometheusMetricCollector
	cases["prometheus collector"] = struct {
		exp  *katibv1beta1.Experiment
		want string
	}{prom, `metricsCollector.kind="PrometheusMetric" is not one of StdOut,File,TensorFlowEvent,Push,Custom`}

	resample := valid(pbtExperiment("p"))
	resample.Spec.Algorithm.AlgorithmSettings = append(resample.Spec.Algorithm.AlgorithmSettings, common.AlgorithmSetting{Name: "resample_probability", Value: "0.5"})
	cases["resample probability"] = struct {
		exp  *katibv1beta1.Experiment
		want string
	}{resample, "pbt.resample_probability and * together are refused"}

	longRunning := valid(pbtExperiment("p"))
	longRunning.Spec.ResumePolicy = tune.LongRunning
	cases["pbt without FromVolume"] = struct {
		exp  *katibv1beta1.Experiment
		want string
	}{longRunning, "algorithm=pbt requires resumePolicy=FromVolume"}

	noStep := valid(pbtExperiment("p"))
	noStep.Spec.Parameters[0].FeasibleSpace.Step = ""
	cases["pbt float without step"] = struct {
		exp  *katibv1beta1.Experiment
		want string
	}{noStep, "pbt.double requires pbt.double.step"}

	skopt := valid(spaceExperiment("b", tune.Bayesian(), tune.Float("m", 1e-3, 1).Log()))
	skopt.Spec.Parameters[0].FeasibleSpace = katibv1beta1.FeasibleSpace{Min: "-1", Max: "1", Distribution: katibv1beta1.DistributionUniform}
	cases["bayesian uniform float"] = struct {
		exp  *katibv1beta1.Experiment
		want string
	}{skopt, `bayesianoptimization.double="uniform" is not one of logUniform`}

	goptuna := valid(spaceExperiment("c", tune.CMAES(), tune.Float("a", 1e-3, 1), tune.Float("b", 0, 1)))
	goptuna.Spec.Parameters[0].FeasibleSpace.Distribution = katibv1beta1.DistributionLogUniform
	cases["cmaes log"] = struct {
		exp  *katibv1beta1.Experiment
		want string
	}{goptuna, `cmaes.double="logUniform" is not one of uniform`}

	exponent := valid(spaceExperiment("s", tune.Sobol(), tune.Int("steps", 1, 2000000)))
	exponent.Spec.Parameters[0].FeasibleSpace.Max = "2e+06"
	cases["int bound in exponent form"] = struct {
		exp  *katibv1beta1.Experiment
		want string
	}{exponent, `sobol.int.text="exponent" is not one of decimal`}

	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			assert.ErrorContains(t, checkKatibContract(name, c.exp), c.want)
		})
	}
}

// TestContractSettingNames: every setting a typed setter renders is a key
// the algorithm's service reads.
func TestContractSettingNames(t *testing.T) {
	algs := map[string]tune.Algorithm{
		"random":               tune.Random().Seed(1),
		"tpe":                  tune.TPE().Seed(1).Gamma(0.25).PriorWeight(1).EICandidates(24),
		"grid":                 tune.Grid().Seed(1),
		"multivariate-tpe":     tune.MultivariateTPE().Seed(1).StartupTrials(5).EICandidates(24),
		"cmaes":                tune.CMAES().Seed(1).Sigma(0.3).RestartStrategy("bipop"),
		"sobol":                tune.Sobol(),
		"bayesianoptimization": tune.Bayesian().Seed(1).BaseEstimator("RF").InitialPoints(3).AcquisitionFunc("LCB").AcquisitionOptimizer("lbfgs"),
		"hyperband":            tune.Hyperband("epochs", 9).Eta(3),
		"pbt":                  tune.PBT("/ckpt", 5, 0.2),
	}
	f, ok := katibContract.Fact(contract.Key, "algorithm")
	require.True(t, ok)
	for name, a := range algs {
		assert.Equal(t, name, a.Name())
		assert.Contains(t, strings.Split(f.Value, ","), name)
		x := tune.Float("x", 0.1, 1).Step(0.1)
		switch name {
		case "bayesianoptimization":
			x = tune.Float("x", 0.1, 1).Log()
		case "hyperband":
			x = tune.Float("x", 0.1, 1)
		}
		exp, err := spaceExperiment("s", a, tune.Int("epochs", 1, 9), x).Parallelism(9).Build()
		require.NoError(t, err, name)
		cfg := experimentConfig(exp)
		for k := range cfg {
			if strings.HasPrefix(k, name+".") {
				_, ok := katibContract.Fact(contract.Key, k)
				assert.True(t, ok, "%s renders %s, which the contract does not list", name, k)
			}
		}
		assert.NoError(t, checkKatibContract(name, exp))
	}
	assert.True(t, slices.Contains(strings.Split(f.Value, ","), "pbt"))
}
