package fuzzcorpus

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParse reads what marshalCorpusFile (src/internal/fuzz/encoding.go)
// writes for each type the module's fuzz targets take.
func TestParse(t *testing.T) {
	values, err := parse("go test fuzz v1\n" +
		"[]byte(\"\\x00\\x01a\")\nstring(\"a\\\"b\")\nbool(true)\nint(-7)\nint32(2)\nrune('ü')\nbyte('\\x05')\n" +
		"uint8('a')\nuint64(9)\nint64(-1)\nfloat64(0.25)\nfloat64(+Inf)\nmath.Float64frombits(0x7ff8000000000002)\n")
	require.NoError(t, err)
	require.Len(t, values, 13)
	assert.Equal(t, []any{[]byte{0, 1, 'a'}, `a"b`, true, -7, int32(2), 'ü', byte(5), byte('a'), uint64(9), int64(-1), 0.25, math.Inf(1)}, values[:12])
	assert.Equal(t, uint64(0x7ff8000000000002), math.Float64bits(values[12].(float64)))

	for _, bad := range []string{"go test fuzz v2\nint(1)", "go test fuzz v1\nint(x)", "go test fuzz v1\ncomplex128(1)", "go test fuzz v1\nstring(\"a\"", "go test fuzz v1\nbyte('ab')"} {
		_, err := parse(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestSavedAndBytes(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "testdata", "fuzz", "FuzzX"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "testdata", "fuzz", "FuzzX", "1"), []byte("go test fuzz v1\n[]byte(\"ab\")\n"), 0o644))
	t.Chdir(dir)
	assert.Equal(t, [][]byte{[]byte("ab")}, Bytes(t, "FuzzX"))
	assert.Empty(t, Saved(t, "FuzzNone"))
}

func TestProgramsAndPick(t *testing.T) {
	a, b := Programs(1, 50, 2, 6), Programs(1, 50, 2, 6)
	assert.Equal(t, a, b, "a fixed seed gives the same programs")
	small := 0
	total := 0
	for _, p := range a {
		assert.True(t, len(p) >= 2 && len(p) <= 6, "length %d", len(p))
		for _, c := range p {
			total++
			if c < 3 {
				small++
			}
		}
	}
	assert.Greater(t, small, total/2, "most bytes pick the front of a dictionary")

	p := NewProgram([]byte{1, 5})
	assert.Equal(t, "b", Pick(p, []string{"a", "b"}))
	assert.Equal(t, "c", Pick(p, []string{"a", "b", "c"}))
	assert.True(t, p.Done())
	assert.Equal(t, byte(0), p.Byte(), "bytes past the end read as zero")
}
