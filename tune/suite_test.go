package tune_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/internal/testsupport/ci"
)

// TestSuiteFormulasAgree: the Python side of the benchmark computes the
// same observed and clean values as the Go side on random points of every
// objective of the suite.
func TestSuiteFormulasAgree(t *testing.T) {
	if _, err := os.Stat(debianPython); err != nil {
		ci.Skip(t, "%s: %v", debianPython, err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	type point struct {
		Function string         `json:"function"`
		Values   map[string]any `json:"values"`
	}
	var points []point
	var want [][2]float64
	for _, f := range benchFunctions {
		for range 12 {
			values := map[string]any{}
			for _, s := range f.specs {
				u := rng.Float64()
				switch s.Kind {
				case "float":
					v := s.Lo + u*(s.Hi-s.Lo)
					if s.Log {
						v = math.Exp(math.Log(s.Lo) + u*(math.Log(s.Hi)-math.Log(s.Lo)))
					}
					values[s.Name] = v
				case "int":
					values[s.Name] = int(s.Lo) + rng.IntN(int(s.Hi-s.Lo)+1)
				case "choice":
					values[s.Name] = s.Choices[rng.IntN(len(s.Choices))]
				}
			}
			obs, clean := evalBench(f, func(name string) any { return values[name] })
			require.False(t, math.IsNaN(obs) || math.IsNaN(clean), "%s at %v", f.name, values)
			points = append(points, point{f.name, values})
			want = append(want, [2]float64{obs, clean})
		}
	}
	data, err := json.Marshal(points)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "points.json")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	out, err := exec.CommandContext(t.Context(), debianPython, filepath.Join("testdata", "optuna_bench.py"), "eval", writeSuite(t, benchFunctions), path).Output()
	require.NoError(t, err)
	sc := bufio.NewScanner(bytes.NewReader(out))
	i := 0
	for sc.Scan() {
		var got struct{ Observed, Clean float64 }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &got))
		require.Less(t, i, len(want))
		assert.InDelta(t, want[i][0], got.Observed, 1e-9*(1+math.Abs(want[i][0])), "%s observed at %v", points[i].Function, points[i].Values)
		assert.InDelta(t, want[i][1], got.Clean, 1e-9*(1+math.Abs(want[i][1])), "%s clean at %v", points[i].Function, points[i].Values)
		i++
	}
	assert.Equal(t, len(want), i)
}
