package pipeline_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/pipeline"
)

// fuzzGraph builds a pipeline from bytes: the first byte gives the number of
// steps, then each pair of bytes an edge from step a to step b (b waits for
// a), made with After or, when a's byte is odd, by b reading a's output.
func fuzzGraph(data []byte) (*pipeline.Pipeline, int, [][2]int) {
	if len(data) == 0 {
		return nil, 0, nil
	}
	n := 1 + int(data[0])%16
	steps := make([]*pipeline.ContainerStep, n)
	for i := range steps {
		steps[i] = pipeline.Container(fmt.Sprintf("s%d", i)).Image("busybox").Command("true").Outputs("o")
	}
	var edges [][2]int
	reads := make([][]string, n)
	for k := 1; k+1 < len(data) && len(edges) < 64; k += 2 {
		a, b := int(data[k])%n, int(data[k+1])%n
		edges = append(edges, [2]int{a, b})
		if data[k]%2 == 1 && a != b { // reading one's own output is a different error
			reads[b] = append(reads[b], steps[a].Output("o"))
		} else {
			steps[b].After(steps[a])
		}
	}
	p := pipeline.New("fuzz")
	for i, s := range steps {
		if len(reads[i]) > 0 {
			s.Args(reads[i]...)
		}
		p.Step(s)
	}
	return p, n, edges
}

// acyclic decides, with a transitive closure rather than a topological sort,
// whether the edges form a DAG.
func acyclic(n int, edges [][2]int) bool {
	reach := make([][]bool, n)
	for i := range reach {
		reach[i] = make([]bool, n)
	}
	for _, e := range edges {
		reach[e[0]][e[1]] = true
	}
	for k := range n {
		for i := range n {
			if !reach[i][k] {
				continue
			}
			for j := range n {
				if reach[k][j] {
					reach[i][j] = true
				}
			}
		}
	}
	for i := range n {
		if reach[i][i] {
			return false
		}
	}
	return true
}

func FuzzCompileAcyclic(f *testing.F) {
	f.Add([]byte{3, 0, 1, 2, 3})                   // s0 → s1, s2 → s0 (read)
	f.Add([]byte{3, 0, 1, 2, 1, 4, 2})             // chain through outputs
	f.Add([]byte{2, 0, 1, 1, 0})                   // two-step cycle
	f.Add([]byte{1, 0, 0})                         // self loop
	f.Add([]byte{5, 0, 1, 1, 2, 2, 3, 3, 4, 4, 0}) // long cycle
	f.Add([]byte{15, 0, 5, 5, 9, 9, 14, 2, 3, 3, 7, 7, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		p, n, edges := fuzzGraph(data)
		if p == nil {
			return
		}
		wf, err := p.Build()
		want := acyclic(n, edges)
		require.Equal(t, want, err == nil, "edges %v: %v", edges, err)
		edgeSet := map[[2]string]bool{}
		for _, e := range edges {
			edgeSet[[2]string{fmt.Sprintf("s%d", e[0]), fmt.Sprintf("s%d", e[1])}] = true
		}
		if !want {
			// Every reported cycle is a real one.
			for _, fe := range fieldErrors(t, err) {
				require.Equal(t, "dependency cycle", fe.Detail)
				names := strings.Split(fmt.Sprint(fe.BadValue), " → ")
				require.GreaterOrEqual(t, len(names), 2)
				require.Equal(t, names[0], names[len(names)-1])
				for i := 0; i+1 < len(names); i++ {
					require.True(t, edgeSet[[2]string{names[i], names[i+1]}], "%s → %s is not an edge", names[i], names[i+1])
				}
			}
			return
		}
		// Each task depends on exactly its upstream steps.
		deps := map[string][]string{}
		for e := range edgeSet {
			deps[e[1]] = append(deps[e[1]], e[0])
		}
		for _, tk := range wf.Spec.Templates[0].DAG.Tasks {
			want := deps[tk.Name]
			slices.SortFunc(want, func(a, b string) int { return numbered(a) - numbered(b) })
			assert.Equal(t, want, tk.Dependencies, "task %s", tk.Name)
		}
	})
}

func numbered(s string) int {
	var n int
	fmt.Sscanf(s, "s%d", &n)
	return n
}
