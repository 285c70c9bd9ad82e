package golden_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/golden"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed []string
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return "recorder" }
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}
func (r *recorder) FailNow() { runtime.Goexit() }
func (r *recorder) Fatal(args ...any) {
	r.failed = append(r.failed, fmt.Sprint(args...))
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// run calls f with a recorder on its own goroutine, as FailNow needs.
func run(f func(t testing.TB)) []string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.failed
}

func TestAssert(t *testing.T) {
	assert.Empty(t, run(func(t testing.TB) { golden.Assert(t, "hello.golden", []byte("hello\n")) }))

	failed := run(func(t testing.TB) { golden.Assert(t, "hello.golden", []byte("goodbye\n")) })
	assert.Len(t, failed, 1)
	assert.Contains(t, failed[0], "-hello")
	assert.Contains(t, failed[0], "+goodbye")

	failed = run(func(t testing.TB) { golden.Assert(t, "missing.golden", []byte("x")) })
	assert.Len(t, failed, 1)
	assert.Contains(t, failed[0], "run go test -update to create testdata/missing.golden")
}

func TestAssertRender(t *testing.T) {
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: cube.Identity{Kind: "demo", Release: "hello"}.ObjectMeta("hello", "", nil, nil),
	}
	golden.AssertRender(t, "configmap.golden", cube.Objects(cm))
}
