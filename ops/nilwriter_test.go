package ops_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/ops"
)

// A nil writer is an error naming the writer, never a panic.
func TestWritersRefuseANilWriter(t *testing.T) {
	series := []ops.DeviceSeries{{Namespace: "team-a", Pod: "p", Device: "GPU-0",
		Utilisation: []ops.Sample{{At: t0.Add(time.Minute), Value: 40}}}}
	err := ops.WriteUtilisationSVG(nil, series, t0, t0.Add(time.Hour), 15)
	assert.EqualError(t, err, "write utilisation svg: w: must not be nil")
	err = ops.WriteUtilisationSVG(nil, series, t0, t0, 15)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "w: must not be nil", "every problem is reported")
	assert.Contains(t, err.Error(), "to: must be after from")

	findings := []ops.Finding{{Tenant: "team-a", Release: "chat", Action: ops.Report}}
	assert.EqualError(t, ops.WriteFindings(nil, findings), "write findings: w: must not be nil")
	assert.EqualError(t, (&ops.Statement{}).WriteTable(nil), "write statement: w: must not be nil")
	assert.EqualError(t, (&ops.Usage{}).WriteCSV(nil), "write usage csv: w: must not be nil")
	assert.EqualError(t, (&ops.Usage{}).WriteTable(nil), "write usage table: w: must not be nil")
}
