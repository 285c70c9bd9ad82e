package notebook_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cubestudio/cube/notebook"
)

// The lifecycle calls refuse a nil client with an error naming the call
// and the notebook, never a panic.
func TestLifecycleRefusesANilClient(t *testing.T) {
	ctx := t.Context()
	assert.EqualError(t, notebook.Stop(ctx, nil, "team-a", "lab"), "stop notebook team-a/lab: client: must not be nil")
	assert.EqualError(t, notebook.Start(ctx, nil, "team-a", "lab"), "start notebook team-a/lab: client: must not be nil")
	assert.EqualError(t, notebook.Renew(ctx, nil, "team-a", "lab", time.Now()), "renew notebook team-a/lab: client: must not be nil")
	culled, err := notebook.Cull(ctx, nil, "team-a", time.Hour)
	assert.EqualError(t, err, "cull notebooks: client: must not be nil")
	assert.Empty(t, culled)
}
