package ops_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/ops"
)

func TestStatementPricesUsage(t *testing.T) {
	u, err := ops.Accounting(samplePods(t), t0, t0.Add(24*time.Hour))
	require.NoError(t, err)
	prices := ops.PriceTable{"H100-SXM-80GB": 20, "A100-SXM-80GB": 12, "Ascend910B3": 8}
	st, err := ops.NewStatement(u, "team-a", prices, "CNY")
	require.NoError(t, err)
	require.Len(t, st.Lines, 2)
	assert.Equal(t, ops.Line{Accelerator: "A100-SXM-80GB", DeviceHours: 7, Price: 12, Amount: 84}, st.Lines[0])
	assert.Equal(t, ops.Line{Accelerator: "H100-SXM-80GB", DeviceHours: 14, Price: 20, Amount: 280}, st.Lines[1])
	assert.Equal(t, 364.0, st.Total)
	var out bytes.Buffer
	require.NoError(t, st.WriteTable(&out))
	assert.Equal(t, `statement for team-a, 2026-11-01T00:00:00Z to 2026-11-02T00:00:00Z
    ACCELERATOR  DEVICE-HOURS  PRICE  AMOUNT
  A100-SXM-80GB          7.00  12.00   84.00
  H100-SXM-80GB         14.00  20.00  280.00
          total                  CNY  364.00
`, out.String())
}

func TestStatementErrors(t *testing.T) {
	_, err := ops.NewStatement(nil, "", ops.PriceTable{"x": -1}, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "usage: must not be nil")
	assert.Contains(t, err.Error(), "tenant: must not be empty")
	assert.Contains(t, err.Error(), `prices["x"]`)
	u, err := ops.Accounting(samplePods(t), t0, t0.Add(24*time.Hour))
	require.NoError(t, err)
	_, err = ops.NewStatement(u, "team-b", ops.PriceTable{}, "CNY")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `prices["A100-SXM-80GB"]`)
	assert.Contains(t, err.Error(), `prices["Ascend910B3"]`)
	var nilStatement *ops.Statement
	assert.Error(t, nilStatement.WriteTable(&bytes.Buffer{}))
}
