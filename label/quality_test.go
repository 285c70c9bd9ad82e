package label_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/label"
)

// Cohen's worked example (Wikipedia, "Cohen's kappa", from 50 grant
// proposals read by two readers): both yes 20, A yes B no 5, A no B yes
// 10, both no 15: pₒ = 0.7, pₑ = 0.5, κ = 0.4.
func TestCohenKappaWorkedExample(t *testing.T) {
	var a, b []string
	add := func(n int, x, y string) {
		for range n {
			a, b = append(a, x), append(b, y)
		}
	}
	add(20, "yes", "yes")
	add(5, "yes", "no")
	add(10, "no", "yes")
	add(15, "no", "no")
	k, err := label.CohenKappa(a, b)
	require.NoError(t, err)
	assert.InDelta(t, 0.4, k, 1e-12)

	_, err = label.CohenKappa([]string{"x"}, nil)
	assert.ErrorContains(t, err, "1 labels against 0")
	_, err = label.CohenKappa(nil, nil)
	assert.ErrorContains(t, err, "no items")
	_, err = label.CohenKappa([]string{"x", "x"}, []string{"x", "x"})
	assert.ErrorIs(t, err, label.ErrUndefined)
}

// Fleiss' worked example (Fleiss 1971, as tabulated in Wikipedia's
// "Fleiss' kappa"): 10 items, 14 raters, 5 categories; P̄ = 0.378,
// P̄ₑ = 0.213, κ = 0.210.
func TestFleissKappaWorkedExample(t *testing.T) {
	counts := [][]int{
		{0, 0, 0, 0, 14},
		{0, 2, 6, 4, 2},
		{0, 0, 3, 5, 6},
		{0, 3, 9, 2, 0},
		{2, 2, 8, 1, 1},
		{7, 7, 0, 0, 0},
		{3, 2, 6, 3, 0},
		{2, 5, 3, 2, 2},
		{6, 5, 2, 1, 0},
		{0, 2, 2, 3, 7},
	}
	k, err := label.FleissKappa(counts)
	require.NoError(t, err)
	assert.InDelta(t, 0.210, k, 0.0005)

	for want, bad := range map[string][][]int{
		"no items":                 {},
		"item 1 has 1 categories":  {{1, 1}, {2}},
		"item 0 has 1 ratings":     {{1, 0}},
		"negative count":           {{3, -1}},
		"every rating is the same": {{2, 0}, {3, 0}},
	} {
		_, err := label.FleissKappa(bad)
		assert.ErrorContains(t, err, want)
	}
}

func annotated(id int, by ...string) label.Task {
	t := label.Task{ID: id, Data: map[string]any{"text": "x"}}
	for i, c := range by {
		t.Annotations = append(t.Annotations, label.Annotation{CompletedBy: i + 1, Result: []label.Result{choice(c)}})
	}
	return t
}

func TestAgreementFromAnnotations(t *testing.T) {
	// Two annotators on Cohen's example, as tasks: Fleiss' kappa of two
	// raters is Scott's pi, and Cohen's kappa of the pair is 0.4.
	var tasks []label.Task
	id := 0
	add := func(n int, x, y string) {
		for range n {
			id++
			tasks = append(tasks, annotated(id, x, y))
		}
	}
	add(20, "yes", "yes")
	add(5, "yes", "no")
	add(10, "no", "yes")
	add(15, "no", "no")
	tasks = append(tasks, annotated(999, "yes")) // one annotation: not counted
	rep, err := label.Agreement(tasks, "label")
	require.NoError(t, err)
	assert.Equal(t, 50, rep.Items)
	require.Len(t, rep.Pairs, 1)
	assert.Equal(t, label.PairKappa{A: 1, B: 2, Items: 50, Kappa: rep.Pairs[0].Kappa}, rep.Pairs[0])
	assert.InDelta(t, 0.4, rep.Pairs[0].Kappa, 1e-12)
	// Scott's pi: pₑ = 0.55² + 0.45² = 0.505, κ = (0.7 − 0.505)/0.495.
	assert.InDelta(t, (0.7-0.505)/0.495, rep.Fleiss, 1e-12)
	assert.InDelta(t, rep.Fleiss, rep.PerLabel["yes"], 1e-12, "with two labels each one-vs-rest is the whole")

	_, err = label.Agreement([]label.Task{annotated(1, "a")}, "label")
	assert.ErrorContains(t, err, `agreement on "label": no task has two annotations`)
}

func TestAccuracyAndUncertaintyQueue(t *testing.T) {
	pred := func(c, version string, score float64) label.Prediction {
		return label.Prediction{Result: []label.Result{choice(c)}, ModelVersion: version, Score: score}
	}
	t1 := annotated(1, "pos")
	t1.Predictions = []label.Prediction{pred("pos", "v1", 0.9), pred("neg", "v2", 0.6)}
	t2 := annotated(2, "neg", "pos")
	t2.Annotations[0].GroundTruth = true
	t2.Predictions = []label.Prediction{pred("neg", "v1", 0.8)}
	t3 := label.Task{ID: 3, Predictions: []label.Prediction{pred("pos", "v1", 0.2)}}
	t4 := label.Task{ID: 4, Predictions: []label.Prediction{pred("pos", "v1", 0.55)}}
	t5 := label.Task{ID: 5} // no prediction yet
	t6 := annotated(6, "neg")
	t6.Annotations[0].WasCancelled = true
	t6.Predictions = []label.Prediction{pred("pos", "v1", 0.1)}

	rep, err := label.Accuracy([]label.Task{t1, t2, t3, t4, t5, t6}, "label")
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Compared)
	assert.Equal(t, 2, rep.Correct)
	assert.Equal(t, label.AccuracyReport{Compared: 2, Correct: 2, Accuracy: 1}, rep.ByModel["v1"])
	assert.Equal(t, label.AccuracyReport{Compared: 1, Correct: 0, Accuracy: 0}, rep.ByModel["v2"])
	_, err = label.Accuracy([]label.Task{t5}, "label")
	assert.ErrorContains(t, err, "no task has both")

	q := label.UncertaintyQueue([]label.Task{t1, t2, t3, t4, t5, t6}, 2)
	require.Len(t, q, 2)
	assert.Equal(t, []int{6, 3}, []int{q[0].ID, q[1].ID}, "a cancelled annotation leaves the task open")
	assert.Len(t, label.UncertaintyQueue([]label.Task{t1, t2, t3, t4, t5, t6}, 0), 3)
}
