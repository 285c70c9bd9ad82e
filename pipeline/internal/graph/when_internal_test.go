package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEvalWhen(t *testing.T) {
	for expr, want := range map[string]bool{
		"1 == 1":           true,
		"prod == prod":     true,
		"prod != staging":  true,
		"'x y' == \"x y\"": true,
		"3 > 10":           false, // numbers compare as numbers
		"'3' > '10'":       true,  // quoted strings compare as text
		"0.82 >= 0.8":      true,
		"-1 < 0":           true,
		"!(a == b)":        true,
		"a == b || c != d": true,
		"true && false":    false,
		"!true || !false":  true,
		"v1.2 =~ '^v1\\.'": true,
		"abc !~ 'z'":       true,
		"5 == '5'":         false, // a number is not a string
		"true == true":     true,
	} {
		got, err := EvalWhen(expr)
		require.NoError(t, err, expr)
		assert.Equal(t, want, got, expr)
	}
}

func TestEvalWhenErrors(t *testing.T) {
	for expr, msg := range map[string]string{
		"":              "empty expression",
		"a ==":          "unexpected end of expression",
		"(a == b":       "missing )",
		"a == b)":       `unexpected ")"`,
		"my-model == x": "hint: quote the value",
		"1 < a":         "cannot compare 1 with a",
		"a < true":      "cannot compare a with true",
		"true < false":  "cannot order true",
		"a && b":        "&& needs booleans",
		"!a":            "! needs a boolean",
		"5":             "is 5, not a boolean",
		"'open":         "unterminated string",
		"a $ b":         `invalid token "$"`,
		"a = b":         `invalid token "="`,
		"a =~ '('":      "bad pattern",
		"1 =~ 'x'":      "=~ needs strings",
		"3abc == 1":     "hint: quote the value",
		"a == b == c":   `unexpected "=="`,
		"== a":          `unexpected "=="`,
	} {
		_, err := EvalWhen(expr)
		require.Error(t, err, expr)
		assert.Contains(t, err.Error(), msg, expr)
	}
}

func TestPlaceholders(t *testing.T) {
	var found []string
	placeholders("a {{ params.x }} {{{item}} {{a}b}} {{steps.s.outputs.o}}{{", func(start, end int, inner string) {
		found = append(found, inner)
	})
	assert.Equal(t, []string{"params.x", "item", "steps.s.outputs.o"}, found)

	out := Substitute("{{params.x}}-{{workflow.uid}}-{{item.k}}-{{params.}}", func(r Ref) string { return "<" + InputName(r) + ">" })
	assert.Equal(t, "<>-{{workflow.uid}}-<item__k>-{{params.}}", out, "foreign and malformed placeholders stay")
	assert.Equal(t, "plain", Substitute("plain", func(Ref) string { return "x" }))

	r, ok := SoleRef("{{steps.a.outputs.b}}")
	assert.True(t, ok)
	assert.Equal(t, Ref{Kind: RefOutput, Step: "a", Name: "b"}, r)
	for _, s := range []string{" {{params.a}}", "{{params.a}}{{params.b}}", "{{workflow.uid}}", "x"} {
		_, ok := SoleRef(s)
		assert.False(t, ok, s)
	}
}

func TestParseRefErrors(t *testing.T) {
	for inner, msg := range map[string]string{
		"params.":          "malformed placeholder {{params.}}",
		"params.a.b":       "malformed placeholder {{params.a.b}}",
		"steps.a.outputs":  "want {{steps.STEP.outputs.NAME}}",
		"steps..outputs.x": "want {{steps.STEP.outputs.NAME}}",
		"outputs.x":        "want {{outputs.NAME.path}}",
		"outputs.x.file":   "want {{outputs.NAME.path}}",
		"item.":            "malformed placeholder {{item.}}",
		"item.a.b":         "malformed placeholder {{item.a.b}}",
		"workspace.x":      "malformed placeholder {{workspace.x}}",
		"pipeline.uid":     "malformed placeholder {{pipeline.uid}}",
		"steps":            "want {{steps.STEP.outputs.NAME}}",
	} {
		_, err := parseRef(inner)
		require.Error(t, err, inner)
		assert.Contains(t, err.Error(), msg, inner)
	}
	for inner, want := range map[string]Ref{
		"params.lr":             {Kind: RefParam, Name: "lr"},
		"steps.train.outputs.m": {Kind: RefOutput, Step: "train", Name: "m"},
		"outputs.m.path":        {Kind: RefOutputPath, Name: "m"},
		"item":                  {Kind: RefItem},
		"item.k":                {Kind: RefItem, Name: "k"},
		"workspace":             {Kind: RefWorkspace},
		"pipeline.name":         {Kind: RefPipelineName},
		"pipeline.status":       {Kind: RefPipelineStatus},
	} {
		got, err := parseRef(inner)
		require.NoError(t, err, inner)
		assert.Equal(t, want, got, inner)
	}
}
