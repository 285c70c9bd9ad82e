package bpe

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTokensSpellTheText(t *testing.T) {
	tok := CL100kBase()
	pieces, err := tok.Tokens("hello world")
	require.NoError(t, err)
	assert.Equal(t, []string{"hello", " world"}, pieces)
	text := "Kubernetes 调度 GPUs — naïve café 🚀"
	pieces, err = tok.Tokens(text)
	require.NoError(t, err)
	assert.Equal(t, text, strings.Join(pieces, ""))
	assert.Equal(t, len(pieces), tok.Count(text))
	assert.Equal(t, "o200k_base", O200kBase().Name())

	var nilTok *Tokenizer
	_, err = nilTok.Tokens("x")
	assert.ErrorContains(t, err, "nil Tokenizer")
	assert.Zero(t, nilTok.Count("x"))
}
