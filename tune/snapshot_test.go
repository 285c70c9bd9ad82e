package tune_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/internal/testsupport/snapshot"
)

func TestObjectsLeavesBuilder(t *testing.T) {
	e := baseExperiment("keep")
	before := snapshot.Of(e)
	first, err := e.Objects()
	require.NoError(t, err)
	_, err = e.Build()
	require.NoError(t, err)
	assert.Equal(t, before, snapshot.Of(e))
	first[len(first)-1].SetName("changed")
	again, err := e.Objects()
	require.NoError(t, err)
	assert.Equal(t, "keep", again[len(again)-1].GetName())
	assert.Equal(t, before, snapshot.Of(e))
}
