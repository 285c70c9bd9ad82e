package tune

import (
	"github.com/cubestudio/cube"

	"math"
	"slices"
)

// stops decides whether trial number, having made reports, stops now,
// judged against the finished trials prior.
func (l *Local) stops(es EarlyStopping, number int, reports []float64, prior []TrialResult) bool {
	switch es.name {
	case EarlyStoppingHalving:
		return l.halvingStops(reports, prior, intSetting(es.settings, "start_step", 1), intSetting(es.settings, "eta", 3),
			intSetting(es.settings, "early_stopping_rate", 0))
	case EarlyStoppingHyperband:
		h := newHyperband(es)
		b := h.bracketOf(number)
		var same []TrialResult
		for _, r := range prior {
			if h.bracketOf(r.Number) == b {
				same = append(same, r)
			}
		}
		return l.halvingStops(reports, same, h.start, h.eta, b)
	}
	return l.medianStops(reports, prior, intSetting(es.settings, "start_step", 4), intSetting(es.settings, "min_trials_required", 3))
}

// medianStops is Katib's medianstop: the median over completed trials of
// the average of their first start reports; a trial whose best value so
// far is worse is stopped.
func (l *Local) medianStops(reports []float64, prior []TrialResult, start, minTrials int) bool {
	if len(reports) < start {
		return false
	}
	var avgs []float64
	for _, r := range prior {
		if r.State != cube.Succeeded || len(r.Reports) < start {
			continue
		}
		sum := 0.0
		for _, v := range r.Reports[:start] {
			sum += v
		}
		avgs = append(avgs, sum/float64(start))
	}
	if len(avgs) < minTrials {
		return false
	}
	median := medianOf(avgs)
	best := reports[0]
	for _, v := range reports[1:] {
		if l.objective.better(v, best) {
			best = v
		}
	}
	return l.objective.better(median, best)
}

// halvingStops is successive halving at the rungs start·eta^(rate+k): at a
// rung, the trial goes on only if its report is at least as good as the
// ⌊n/eta⌋-th best of the n reports there (the best one when n < eta),
// counting its own and those of prior trials that reached the rung.
func (l *Local) halvingStops(reports []float64, prior []TrialResult, start, eta, rate int) bool {
	step := len(reports)
	if !isRung(step, start, eta, rate) {
		return false
	}
	own := reports[step-1]
	competing := []float64{own}
	for _, r := range prior {
		if (r.State == cube.Succeeded || r.State == EarlyStopped) && len(r.Reports) >= step {
			competing = append(competing, r.Reports[step-1])
		}
	}
	slices.SortStableFunc(competing, func(a, b float64) int {
		switch {
		case l.objective.better(a, b):
			return -1
		case l.objective.better(b, a):
			return 1
		}
		return 0
	})
	k := max(len(competing)/eta-1, 0)
	return l.objective.better(competing[k], own)
}

// isRung reports whether step is start·eta^(rate+k) for some k >= 0.
func isRung(step, start, eta, rate int) bool {
	r := start
	for range rate {
		if r > step {
			return false
		}
		r *= eta
	}
	for r < step {
		r *= eta
	}
	return r == step
}

// hyperband lays out the brackets of HyperbandStop.
type hyperband struct {
	start, eta int
	slots      []int // trials per bracket in one round
	round      int   // their sum
}

func newHyperband(es EarlyStopping) hyperband {
	h := hyperband{start: intSetting(es.settings, "start_step", 1), eta: intSetting(es.settings, "eta", 3)}
	maxStep := intSetting(es.settings, "max_step", h.start)
	// s_max = ⌊log_eta(max/start)⌋, counted in integers to avoid rounding.
	smax := 0
	for r := h.start; r <= maxStep/h.eta; r *= h.eta {
		smax++
	}
	for b := 0; b <= smax; b++ {
		s := smax - b
		n := int(math.Ceil(float64(smax+1) / float64(s+1) * math.Pow(float64(h.eta), float64(s))))
		h.slots = append(h.slots, n)
		h.round += n
	}
	return h
}

// bracketOf is trial number's bracket: a round gives the first slots[0]
// trials to bracket 0 (the most aggressive), the next slots[1] to bracket
// 1, and so on.
func (h hyperband) bracketOf(number int) int {
	p := number % h.round
	for b, n := range h.slots {
		if p < n {
			return b
		}
		p -= n
	}
	return len(h.slots) - 1
}
