package yamlenc

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v2"
)

// yamlEdgeStrings are strings yaml.v2 treats specially: words that read
// back as booleans or null, numbers in every notation, timestamps,
// indicators, blanks at the ends, text long enough to fold, and what only
// yaml.v2 writes (line breaks, tabs, Unicode).
var yamlEdgeStrings = []string{
	"", "y", "Y", "yes", "No", "on", "OFF", "true", "False", "null", "~", "Null", "yes please", "onion",
	"0", "1", "-1", "+1", "007", "1_000", "0x1F", "0o17", "0b101", "-0b11", "1e3", "1.5", ".5", "-.5", "+.inf", ".inf", ".NaN", "1.", "1e", "0x", "0b2",
	"100m", "16Gi", "1600Gi", "2", "8", "2024-01-01", "2024-1-2T03:04:05Z", "1:20", "12:30:45", "1.2.3", "1-2",
	"-", "--model", "---", "...", "- x", "-x", ":", ":x", "a:", "a: b", "a:b", "nginx:1.27", "http://x/y", "#x", "a#b", "a #b", "?", "?x", "? x",
	"[x]", "x[0]", "{a}", "a,b", "&a", "*a", "!a", "|", ">", "'a'", `"a"`, "it's", `say "hi"`, `back\slash`, "%x", "@x", "`x`",
	" a", "a ", "a  b", "echo $(LR) > /tmp/o",
	strings.Repeat("word ", 20), strings.Repeat("x", 100), strings.Repeat("k", 130),
	"line\nbreak", "tab\there", "caf\u00e9",
}

func writeYAML(doc map[string]any) ([]byte, bool) {
	var w Writer
	ok := w.Document(doc)
	return w.buf, ok
}

func randomYAMLString(rng *rand.Rand) string {
	if rng.IntN(3) == 0 {
		return yamlEdgeStrings[rng.IntN(len(yamlEdgeStrings))]
	}
	const alphabet = "abcxyzXYZ0123456789 :#-._/'\"\\+@[]{},?!|>*&%`~ebo"
	b := make([]byte, rng.IntN(12))
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

func randomYAMLValue(rng *rand.Rand, depth int) any {
	switch k := rng.IntN(10); {
	case depth < 4 && k < 3:
		m := map[string]any{}
		for range rng.IntN(5) {
			m[randomYAMLString(rng)] = randomYAMLValue(rng, depth+1)
		}
		return m
	case depth < 4 && k < 5:
		s := make([]any, rng.IntN(4))
		for i := range s {
			s[i] = randomYAMLValue(rng, depth+1)
		}
		return s
	case k == 5:
		return []int64{0, 1, -7, math.MaxInt64}[rng.IntN(4)]
	case k == 6:
		return []float64{0.5, -1e21, 3, math.Inf(1), math.NaN(), 1e-7}[rng.IntN(6)]
	case k == 7:
		return []any{true, false, nil}[rng.IntN(3)]
	}
	return randomYAMLString(rng)
}

// TestAppendYAMLMatchesYAMLv2 holds Render's own writer to yaml.v2's
// output on random documents made of edge cases: whatever the writer
// writes is what yaml.v2 writes, and it writes most documents itself.
func TestAppendYAMLMatchesYAMLv2(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	written := 0
	const docs = 20000
	for i := range docs {
		doc := map[string]any{}
		for range 1 + rng.IntN(4) {
			doc[randomYAMLString(rng)] = randomYAMLValue(rng, 1)
		}
		want, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := writeYAML(doc)
		if !ok {
			continue
		}
		written++
		if string(got) != string(want) {
			t.Fatalf("document %d:\nyaml.v2:\n%s\nthe writer:\n%s", i, want, got)
		}
	}
	// Each key and value is an edge case a third of the time, so many
	// documents hold something only yaml.v2 writes; the rest must not.
	if written < docs/10 {
		t.Errorf("the writer wrote %d of %d documents", written, docs)
	}
	t.Logf("the writer wrote %d of %d documents", written, docs)
	for _, s := range yamlEdgeStrings {
		for _, doc := range []map[string]any{{"k": s}, {s: "v"}, {"k": []any{s}}, {"k": []any{map[string]any{s: s, "z": s}}}} {
			want, _ := yaml.Marshal(doc)
			if got, ok := writeYAML(doc); ok && string(got) != string(want) {
				t.Errorf("%q:\nyaml.v2:\n%s\nthe writer:\n%s", s, want, got)
			}
		}
	}
}
