package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestJourney runs the journey on the recorded data set and checks the
// figures: 2 H100 × 72 h + 1 H100 × 66 h, a 50%-compute A100 slice × 48 h,
// the idle vLLM and notebook, and the priced statement.
func TestJourney(t *testing.T) {
	var out bytes.Buffer
	svg := filepath.Join(t.TempDir(), "u.svg")
	require.NoError(t, run(t.Context(), &out, "team-a", svg))
	s := out.String()
	assert.Regexp(t, `team-a\s+qwen\s+vllm\s+H100-SXM-80GB\s+whole\s+144.00\s+1`, s)
	assert.Regexp(t, `team-a\s+chat\s+vllm\s+H100-SXM-80GB\s+whole\s+66.00\s+1`, s)
	assert.Regexp(t, `team-a\s+lab\s+notebook\s+A100-SXM-80GB\s+slice\s+24.00\s+1`, s)
	assert.Regexp(t, `team-a\s+lab\s+notebook\s+notebook-idle-1h\s+0.0\s+0.0\s+stop \(dry run\)`, s)
	assert.Regexp(t, `team-a\s+qwen\s+vllm\s+serving-under-15%-for-2d\s+3.7\s+6.0\s+scale-down \(dry run\)`, s)
	assert.NotContains(t, s, "chat     vllm      serving", "the busy server is not idle")
	assert.Contains(t, s, "until 2026-11-28T00:00:00Z")
	assert.Regexp(t, `total\s+CNY\s+4488.00`, s)
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(b), "<svg"))
	assert.True(t, strings.Contains(string(b), "5 devices, 2 idle"), "svg header")

	// team-b has no prices missing and an Ascend vNPU.
	out.Reset()
	require.NoError(t, run(t.Context(), &out, "team-b", ""))
	assert.Regexp(t, `team-b\s+npu\s+mindie\s+Ascend910B3\s+vnpu\s+36.00\s+1`, out.String())
}
