package retry

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestDelayGrowsAndCaps(t *testing.T) {
	p := Policy{Backoff: time.Second, Factor: 3, MaxBackoff: 20 * time.Second}
	want := []time.Duration{0, time.Second, 3 * time.Second, 9 * time.Second, 20 * time.Second, 20 * time.Second}
	for n, w := range want {
		if got := p.Delay(n); got != w {
			t.Errorf("Delay(%d) = %s, want %s", n, got, w)
		}
	}
	if got := (Policy{Backoff: time.Second}).Delay(5); got != time.Second {
		t.Errorf("a zero Factor waits the same each time: Delay(5) = %s", got)
	}
}

func TestDelayNeverOverflows(t *testing.T) {
	p := Policy{Backoff: time.Hour, Factor: 1000}
	prev := time.Duration(0)
	for n := 1; n < 200; n++ {
		d := p.Delay(n)
		if d < prev {
			t.Fatalf("Delay(%d) = %s fell below Delay(%d) = %s: it overflowed", n, d, n-1, prev)
		}
		prev = d
	}
	if prev != time.Duration(math.MaxInt64) {
		t.Errorf("an uncapped growing wait ends at the largest duration, got %s", prev)
	}
}

func TestProblemsNameEveryField(t *testing.T) {
	p := Policy{Limit: -1, Backoff: -time.Second, Factor: -2, MaxBackoff: -time.Second, MaxDuration: -time.Minute}
	var fields []string
	for _, pr := range p.Problems() {
		fields = append(fields, pr.Field)
	}
	if got := strings.Join(fields, ","); got != "limit,backoff,factor,maxBackoff,maxDuration" {
		t.Errorf("problems name %s", got)
	}
	if got := (Policy{Backoff: time.Minute, MaxBackoff: time.Second}).Err(); got == nil || !strings.Contains(got.Error(), "retry.maxBackoff") {
		t.Errorf("a cap below the first wait: %v", got)
	}
	if err := (Policy{}).Err(); err != nil {
		t.Errorf("the zero Policy is valid: %v", err)
	}
}

func TestDoStopsAtTheLimitAndOnAnUnretryableError(t *testing.T) {
	calls := 0
	boom := errors.New("boom")
	err := Do(t.Context(), Policy{Limit: 2}, nil, func(context.Context) error { calls++; return boom })
	if !errors.Is(err, boom) || calls != 3 {
		t.Errorf("Limit 2: %d calls, err %v; want 3 calls and boom", calls, err)
	}
	calls = 0
	fatal := errors.New("fatal")
	err = Do(t.Context(), Policy{Limit: 5}, func(e error) bool { return !errors.Is(e, fatal) }, func(context.Context) error { calls++; return fatal })
	if !errors.Is(err, fatal) || calls != 1 {
		t.Errorf("an unretryable error: %d calls, err %v", calls, err)
	}
	calls = 0
	err = Do(t.Context(), Policy{Limit: 5}, nil, func(context.Context) error {
		calls++
		if calls < 3 {
			return boom
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("success on the third attempt: %d calls, err %v", calls, err)
	}
}

func TestDoEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	boom := errors.New("boom")
	start := time.Now()
	err := Do(ctx, Policy{Limit: 10, Backoff: time.Hour}, nil, func(context.Context) error {
		calls++
		cancel()
		return boom
	})
	if !errors.Is(err, boom) || !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("got %d calls, err %v", calls, err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("Do waited %s after its context ended", time.Since(start))
	}
}

func TestDoGivesUpAfterMaxDuration(t *testing.T) {
	calls := 0
	err := Do(t.Context(), Policy{Limit: 100, Backoff: 20 * time.Millisecond, MaxDuration: 50 * time.Millisecond}, nil,
		func(context.Context) error { calls++; return errors.New("x") })
	if err == nil || calls > 4 {
		t.Errorf("MaxDuration 50ms with 20ms waits: %d calls", calls)
	}
}

func TestDoRefusesAnInvalidPolicy(t *testing.T) {
	called := false
	err := Do(t.Context(), Policy{Limit: -1}, nil, func(context.Context) error { called = true; return nil })
	if err == nil || called {
		t.Errorf("an invalid policy ran: err %v", err)
	}
}
