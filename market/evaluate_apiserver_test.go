package market_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/market"
)

// TestEvaluationAppliesAndRecords applies evaluation Jobs (an endpoint, and
// local weights on NVIDIA and Ascend) with strict field validation, then
// writes a "succeeded" Job's scores back to the version. The harness itself
// does not run here: the test API server runs no pods, and the test
// cluster cannot fetch benchmark datasets; finishJob stands in for it.
func TestEvaluationAppliesAndRecords(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	store, err := market.NewKubernetesStore(env.Client, ns)
	require.NoError(t, err)
	reg := market.NewRegistry(store)
	v, err := reg.Register(ctx, sampleVersion("support-bot"))
	require.NoError(t, err)

	cl := cube.NewFromClient(env.Client, cube.Namespace(ns))
	for _, e := range []*market.EvaluationJob{
		market.Evaluate("eval-gpu", v, "mmlu").On(hardware.H100).Accelerators(1),
		market.Evaluate("eval-npu", v, "ceval-valid").On(hardware.Ascend910B3).Accelerators(1),
	} {
		_, err := cl.Apply(ctx, e.Namespace(ns))
		require.NoError(t, err, podspec.Of(&e.Handle).Name())
	}
	e := market.Evaluate("eval-bot", v, "mmlu", "gsm8k").Endpoint("http://support-bot-api:8000/v1", "support-bot").Namespace(ns)
	_, err = cl.Apply(ctx, e)
	require.NoError(t, err)
	_, err = market.RecordEvaluation(ctx, env.Client, reg, e)
	require.ErrorIs(t, err, market.ErrNotFinished)

	finishJob(t, env, ns, "eval-bot", "evaluate",
		`{"results":{"gsm8k":{"exact_match,strict-match":0.82},"mmlu":{"acc,none":0.7183,"acc_stderr,none":0.0036}},"dropped":0}`)
	got, err := market.RecordEvaluation(ctx, env.Client, reg, e)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"mmlu/acc": 0.7183, "gsm8k/exact_match/strict-match": 0.82}, got.Metrics)
	stored, err := reg.Get(ctx, "support-bot@1")
	require.NoError(t, err)
	assert.Equal(t, got.Metrics, stored.Metrics)
}
