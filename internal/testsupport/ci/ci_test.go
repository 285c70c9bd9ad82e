package ci

import "testing"

// recorder is a testing.TB that records how a test ended.
type recorder struct {
	testing.TB
	fatal, skipped string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Fatalf(f string, a ...any) { r.fatal = f }
func (r *recorder) Skipf(f string, a ...any)  { r.skipped = f }

func TestSkipFailsUnderCI(t *testing.T) {
	t.Setenv("CI", "true")
	r := &recorder{}
	Skip(r, "prometheus (apt-get install %s)", "prometheus")
	if r.fatal == "" || r.skipped != "" {
		t.Errorf("under CI=true: fatal %q, skipped %q", r.fatal, r.skipped)
	}
	t.Setenv("CI", "")
	r = &recorder{}
	Skip(r, "prometheus")
	if r.skipped == "" || r.fatal != "" {
		t.Errorf("outside CI: fatal %q, skipped %q", r.fatal, r.skipped)
	}
}
