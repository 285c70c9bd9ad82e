package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLabelJourney runs the whole journey in-process, against the
// stand-in Label Studio and model.
func TestLabelJourney(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), &out))
	text := out.String()
	for _, want := range []string{
		"imported 3 tasks into project 1",
		"pre-annotated 3 tasks",
		"model accuracy: 2 of 3",
		`most uncertain: "Name a prime."`,
		"annotators: 3 tasks, Fleiss' kappa 1.00",
		"preference pairs: 3",
		`"value": "Paris."`,
		`"chosen": {
      "from": "gpt",
      "value": "7"`,
		"llm.DPO accepts the dataset",
	} {
		assert.Contains(t, text, want)
	}
}
