package label

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ErrUndefined is returned (wrapped) when a kappa has no value: chance
// agreement is already perfect, because every rating is the same label.
var ErrUndefined = errors.New("kappa is undefined")

// CohenKappa is Cohen's kappa of two annotators who labelled the same
// items: a[i] and b[i] are their labels of item i. κ = (pₒ − pₑ)/(1 − pₑ),
// with pₒ the observed agreement and pₑ the agreement expected from each
// annotator's label frequencies (Cohen 1960).
func CohenKappa(a, b []string) (float64, error) {
	if len(a) != len(b) {
		return 0, fmt.Errorf("cohen's kappa: %d labels against %d: the annotators must label the same items", len(a), len(b))
	}
	if len(a) == 0 {
		return 0, fmt.Errorf("cohen's kappa: no items")
	}
	n := float64(len(a))
	fa, fb := map[string]float64{}, map[string]float64{}
	agree := 0.0
	for i := range a {
		fa[a[i]]++
		fb[b[i]]++
		if a[i] == b[i] {
			agree++
		}
	}
	po := agree / n
	pe := 0.0
	for k, ca := range fa {
		pe += (ca / n) * (fb[k] / n)
	}
	if pe == 1 {
		return 0, fmt.Errorf("cohen's kappa: %w: both annotators gave every item %q", ErrUndefined, a[0])
	}
	return (po - pe) / (1 - pe), nil
}

// FleissKappa is Fleiss' kappa of any number of annotators: counts[i][j]
// is how many annotators put item i in category j. Items may have
// different numbers of ratings (at least two each); with the same number
// it is Fleiss' (1971) statistic.
func FleissKappa(counts [][]int) (float64, error) {
	if len(counts) == 0 {
		return 0, errors.New("fleiss' kappa: no items")
	}
	k := len(counts[0])
	totals := make([]float64, k)
	var sumP, ratings float64
	for i, row := range counts {
		if len(row) != k {
			return 0, fmt.Errorf("fleiss' kappa: item %d has %d categories, item 0 has %d", i, len(row), k)
		}
		n, sq := 0, 0.0
		for j, c := range row {
			if c < 0 {
				return 0, fmt.Errorf("fleiss' kappa: item %d category %d: negative count %d", i, j, c)
			}
			if c > math.MaxInt-n {
				return 0, fmt.Errorf("fleiss' kappa: item %d: the counts add up to more than %d", i, math.MaxInt)
			}
			n += c
			sq += float64(c) * float64(c)
			totals[j] += float64(c)
		}
		if n < 2 {
			return 0, fmt.Errorf("fleiss' kappa: item %d has %d ratings: agreement needs at least two", i, n)
		}
		sumP += (sq - float64(n)) / (float64(n) * float64(n-1))
		ratings += float64(n)
	}
	pBar := sumP / float64(len(counts))
	pe := 0.0
	for _, t := range totals {
		pj := t / ratings
		pe += pj * pj
	}
	if pe == 1 {
		return 0, fmt.Errorf("fleiss' kappa: %w: every rating is the same category", ErrUndefined)
	}
	return (pBar - pe) / (1 - pe), nil
}

// AgreementReport is the agreement of a project's annotators on one
// control.
type AgreementReport struct {
	// Items is how many tasks had at least two annotations.
	Items int
	// Fleiss is Fleiss' kappa over every label.
	Fleiss float64
	// PerLabel is Fleiss' kappa of each label against the rest (a label
	// every annotator always or never chose is left out: undefined).
	PerLabel map[string]float64
	// Pairs is Cohen's kappa of each pair of annotators over the tasks
	// both labelled (pairs whose kappa is undefined are left out).
	Pairs []PairKappa
}

// PairKappa is Cohen's kappa of two annotators (user ids).
type PairKappa struct {
	A, B  int
	Items int
	Kappa float64
}

// Agreement measures how far annotators agree on control, a Choices or
// Rating control, over the non-cancelled annotations of tasks (an export).
func Agreement(tasks []Task, control string) (AgreementReport, error) {
	var rep AgreementReport
	type rating struct {
		user  int
		label string
	}
	var items [][]rating
	labels := map[string]bool{}
	for _, t := range tasks {
		var rs []rating
		for _, a := range t.Annotations {
			if a.WasCancelled {
				continue
			}
			if key, ok := resultKey(a.Result, control); ok {
				rs = append(rs, rating{a.CompletedBy, key})
				labels[key] = true
			}
		}
		if len(rs) >= 2 {
			items = append(items, rs)
		}
	}
	if len(items) == 0 {
		return rep, fmt.Errorf("agreement on %q: no task has two annotations of it", control)
	}
	rep.Items = len(items)
	cats := sortedKeys(labels)
	counts := make([][]int, len(items))
	for i, rs := range items {
		counts[i] = make([]int, len(cats))
		for _, r := range rs {
			j, _ := slices.BinarySearch(cats, r.label)
			counts[i][j]++
		}
	}
	var err error
	if rep.Fleiss, err = FleissKappa(counts); err != nil {
		return rep, fmt.Errorf("agreement on %q: %w", control, err)
	}
	rep.PerLabel = map[string]float64{}
	for j, c := range cats {
		binary := make([][]int, len(counts))
		for i, row := range counts {
			n := 0
			for _, v := range row {
				n += v
			}
			binary[i] = []int{row[j], n - row[j]}
		}
		if k, err := FleissKappa(binary); err == nil {
			rep.PerLabel[c] = k
		}
	}
	pairs := map[[2]int][2][]string{}
	for _, rs := range items {
		for x := range rs {
			for y := range rs {
				a, b := rs[x], rs[y]
				if a.user >= b.user {
					continue
				}
				p := pairs[[2]int{a.user, b.user}]
				pairs[[2]int{a.user, b.user}] = [2][]string{append(p[0], a.label), append(p[1], b.label)}
			}
		}
	}
	for _, key := range slices.SortedFunc(func(yield func([2]int) bool) {
		for k := range pairs {
			if !yield(k) {
				return
			}
		}
	}, func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) }) {
		ls := pairs[key]
		if k, err := CohenKappa(ls[0], ls[1]); err == nil {
			rep.Pairs = append(rep.Pairs, PairKappa{A: key[0], B: key[1], Items: len(ls[0]), Kappa: k})
		}
	}
	return rep, nil
}

// resultKey is a comparable form of the results of control: choices,
// spans, boxes, rating, pairwise selection or text.
func resultKey(results []Result, control string) (string, bool) {
	var parts []string
	for _, r := range results {
		if r.FromName != control {
			continue
		}
		v := r.Value
		switch {
		case v.Choices != nil:
			parts = append(parts, slices.Sorted(slices.Values(v.Choices))...)
		case v.Start != nil && v.End != nil:
			parts = append(parts, fmt.Sprintf("%d-%d:%s", *v.Start, *v.End, strings.Join(v.Labels, "|")))
		case v.Box != nil:
			parts = append(parts, fmt.Sprintf("%.1f,%.1f,%.1f,%.1f:%s", v.Box.X, v.Box.Y, v.Box.Width, v.Box.Height, strings.Join(v.RectangleLabels, "|")))
		case v.Rating != 0:
			parts = append(parts, strconv.Itoa(v.Rating))
		case v.Selected != "":
			parts = append(parts, v.Selected)
		case v.Lines != nil:
			parts = append(parts, strings.Join(v.Lines, "\n"))
		}
	}
	if len(parts) == 0 {
		return "", false
	}
	slices.Sort(parts)
	return strings.Join(parts, ","), true
}

// AccuracyReport is how often predictions matched the accepted annotation.
type AccuracyReport struct {
	Compared, Correct int
	Accuracy          float64
	// ByModel holds the same per model version.
	ByModel map[string]AccuracyReport
}

// Accuracy compares, for control, each prediction of tasks with the
// task's accepted annotation (Task.Accepted): equal choices, the same
// spans with the same labels, the same rating or pairwise choice.
func Accuracy(tasks []Task, control string) (AccuracyReport, error) {
	rep := AccuracyReport{ByModel: map[string]AccuracyReport{}}
	for _, t := range tasks {
		acc, ok := t.Accepted()
		if !ok {
			continue
		}
		want, ok := resultKey(acc.Result, control)
		if !ok {
			continue
		}
		for _, p := range t.Predictions {
			got, _ := resultKey(p.Result, control)
			m := rep.ByModel[p.ModelVersion]
			rep.Compared++
			m.Compared++
			if got == want {
				rep.Correct++
				m.Correct++
			}
			m.Accuracy = float64(m.Correct) / float64(m.Compared)
			rep.ByModel[p.ModelVersion] = m
		}
	}
	if rep.Compared == 0 {
		return rep, fmt.Errorf("accuracy on %q: no task has both a prediction and an accepted annotation of it", control)
	}
	rep.Accuracy = float64(rep.Correct) / float64(rep.Compared)
	return rep, nil
}

// UncertaintyQueue returns up to n tasks (all when n ≤ 0) that have a
// prediction but no accepted annotation, least confident first (by the
// score of their last prediction; ties by task id): the tasks an
// annotator's time teaches the model most about (uncertainty sampling).
func UncertaintyQueue(tasks []Task, n int) []Task {
	type scored struct {
		task  Task
		score float64
	}
	var queue []scored
	for _, t := range tasks {
		if _, done := t.Accepted(); done || len(t.Predictions) == 0 {
			continue
		}
		queue = append(queue, scored{t, t.Predictions[len(t.Predictions)-1].Score})
	}
	slices.SortStableFunc(queue, func(a, b scored) int {
		return cmp.Or(cmp.Compare(a.score, b.score), cmp.Compare(a.task.ID, b.task.ID))
	})
	if n > 0 && len(queue) > n {
		queue = queue[:n]
	}
	out := make([]Task, len(queue))
	for i, s := range queue {
		out[i] = s.task
	}
	return out
}
