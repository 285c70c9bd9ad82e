package fuzzcorpus

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Saved returns the inputs go test -fuzz saved for target (the files
// under testdata/fuzz/<target> of the package under test), one []any per
// file holding its values in order. It fails the test on a file it cannot
// read.
func Saved(tb testing.TB, target string) [][]any {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
	if err != nil {
		tb.Fatal(err)
	}
	var inputs [][]any
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		values, err := parse(string(data))
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		inputs = append(inputs, values)
	}
	return inputs
}

// Bytes returns the saved inputs of a target that takes one []byte.
func Bytes(tb testing.TB, target string) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, values := range Saved(tb, target) {
		b, ok := values[0].([]byte)
		if len(values) != 1 || !ok {
			tb.Fatalf("%s: an input of %d values, want one []byte", target, len(values))
		}
		out = append(out, b)
	}
	return out
}

// Programs returns n byte strings drawn from a PCG seeded with seed, each
// minLen to maxLen bytes long. Three bytes in four are 0, 1 or 2: they pick
// the valid values at the front of a target's argument dictionaries, so
// that many programs build.
func Programs(seed uint64, n, minLen, maxLen int) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([][]byte, n)
	for i := range out {
		data := make([]byte, minLen+rng.IntN(maxLen-minLen+1))
		for j := range data {
			if rng.IntN(4) > 0 {
				data[j] = byte(rng.IntN(3))
			} else {
				data[j] = byte(rng.IntN(256))
			}
		}
		out[i] = data
	}
	return out
}

// parse reads the "go test fuzz v1" format (written by marshalCorpusFile
// in the Go source, src/internal/fuzz/encoding.go): one value a line, as
// type(literal).
func parse(data string) ([]any, error) {
	lines := strings.Split(strings.TrimSpace(data), "\n")
	if lines[0] != "go test fuzz v1" {
		return nil, fmt.Errorf("not a go test fuzz v1 file: %q", lines[0])
	}
	var values []any
	for _, line := range lines[1:] {
		typ, lit, ok := strings.Cut(strings.TrimSpace(line), "(")
		lit, ok2 := strings.CutSuffix(lit, ")")
		if !ok || !ok2 {
			return nil, fmt.Errorf("bad line %q", line)
		}
		v, err := value(typ, lit)
		if err != nil {
			return nil, fmt.Errorf("line %q: %w", line, err)
		}
		values = append(values, v)
	}
	return values, nil
}

func value(typ, lit string) (any, error) {
	switch typ {
	case "[]byte":
		s, err := strconv.Unquote(lit)
		return []byte(s), err
	case "string":
		return strconv.Unquote(lit)
	case "bool":
		return strconv.ParseBool(lit)
	case "byte", "uint8", "rune", "int32":
		if strings.HasPrefix(lit, "'") {
			r, _, tail, err := strconv.UnquoteChar(lit[1:len(lit)-1], '\'')
			if err == nil && tail != "" {
				err = fmt.Errorf("more than one character")
			}
			if typ == "byte" || typ == "uint8" {
				return byte(r), err
			}
			return r, err
		}
		if typ == "byte" || typ == "uint8" {
			n, err := strconv.ParseUint(lit, 0, 8)
			return uint8(n), err
		}
		n, err := strconv.ParseInt(lit, 0, 32)
		return int32(n), err
	case "int":
		n, err := strconv.ParseInt(lit, 0, 64)
		return int(n), err
	case "int64":
		return strconv.ParseInt(lit, 0, 64)
	case "uint64":
		return strconv.ParseUint(lit, 0, 64)
	case "float64":
		return strconv.ParseFloat(lit, 64)
	case "math.Float64frombits":
		n, err := strconv.ParseUint(lit, 0, 64)
		return math.Float64frombits(n), err
	}
	return nil, fmt.Errorf("type %s is not supported", typ)
}
