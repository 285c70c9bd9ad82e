package fuzzcorpus

import (
	"fmt"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

// Stored applies w with c (server-side apply, strict field validation),
// checks that the server stored every object w renders, each with every
// rendered label, annotation and spec and data field as rendered (the
// server may add defaults), and then deletes the objects (background
// propagation: nothing else runs to remove a finalizer), so that a later
// input may reuse their names with other immutable fields. ns is the
// namespace c puts namespaced objects in.
func Stored(t *testing.T, c *cube.Client, env *testenv.Env, ns string, w cube.Workload) {
	t.Helper()
	ctx := t.Context()
	want, err := w.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if _, err = c.Apply(ctx, w); err != nil {
		t.Fatalf("the API server refused what Objects accepted: %v", err)
	}
	for _, obj := range want {
		rendered, err := cube.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(rendered.GroupVersionKind())
		key := client.ObjectKey{Namespace: rendered.GetNamespace(), Name: rendered.GetName()}
		if key.Namespace == "" {
			key.Namespace = ns
		}
		if err := env.Client.Get(ctx, key, got); err != nil {
			t.Fatalf("%s %s not stored: %v", rendered.GetKind(), key, err)
		}
		where := rendered.GetKind() + " " + key.String()
		for _, part := range []string{"spec", "data"} {
			AssertContains(t, where+"."+part, rendered.Object[part], got.Object[part])
		}
		AssertContains(t, where+".labels", mapOf(rendered.GetLabels()), mapOf(got.GetLabels()))
		AssertContains(t, where+".annotations", mapOf(rendered.GetAnnotations()), mapOf(got.GetAnnotations()))
		if err := client.IgnoreNotFound(env.Client.Delete(ctx, got,
			client.PropagationPolicy(metav1.DeletePropagationBackground))); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
	}
}

func mapOf(m map[string]string) any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// AssertContains asserts that got holds every field of want with want's
// value (lists element by element, of the same length); got may hold more
// fields.
func AssertContains(t testing.TB, path string, want, got any) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			t.Errorf("%s: want an object, got %v", path, got)
			return
		}
		for k, v := range w {
			AssertContains(t, path+"."+k, v, g[k])
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			t.Errorf("%s: want a list, got %v", path, got)
			return
		}
		if len(g) != len(w) {
			t.Errorf("%s: want %d elements, got %d", path, len(w), len(g))
			return
		}
		for i := range w {
			AssertContains(t, fmt.Sprintf("%s[%d]", path, i), w[i], g[i])
		}
	default:
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: want %#v, got %#v", path, want, got)
		}
	}
}

// StoredAll builds the workload of every input, and applies each one
// Objects accepts with Stored (after check, when not nil, which may assert
// more on it), each in a subtest that logs the input when it fails. It
// asserts that at least min inputs were accepted, so that a corpus of
// refusals cannot pass, and returns how many were.
func StoredAll[In any](t *testing.T, c *cube.Client, env *testenv.Env, ns string, inputs []In, min int,
	workload func(In) cube.Workload, check func(*testing.T, cube.Workload)) int {
	t.Helper()
	accepted := 0
	for i, in := range inputs {
		w := workload(in)
		if _, err := w.Objects(); err != nil {
			continue
		}
		accepted++
		ok := t.Run("", func(t *testing.T) {
			if check != nil {
				check(t, w)
			}
			Stored(t, c, env, ns, w)
		})
		if !ok {
			t.Logf("input %d %#v was accepted by Objects", i, in)
		}
	}
	t.Logf("%d of %d inputs accepted and applied", accepted, len(inputs))
	if accepted < min {
		t.Errorf("%d inputs accepted, want at least %d: the corpus exercises accepted inputs, not only refusals", accepted, min)
	}
	return accepted
}

// Program reads a fuzz program, a byte string, one byte at a time; bytes
// past its end read as zero.
type Program struct {
	data []byte
	pos  int
}

// NewProgram reads data.
func NewProgram(data []byte) *Program { return &Program{data: data} }

// Byte returns the next byte.
func (p *Program) Byte() byte {
	if p.pos >= len(p.data) {
		p.pos++
		return 0
	}
	b := p.data[p.pos]
	p.pos++
	return b
}

// Done reports whether every byte was read.
func (p *Program) Done() bool { return p.pos >= len(p.data) }

// Pick returns the value of values the next byte selects.
func Pick[T any](p *Program, values []T) T { return values[int(p.Byte())%len(values)] }
