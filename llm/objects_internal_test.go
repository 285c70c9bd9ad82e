package llm

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/hardware"
)

// TestObjectsLeavesTheBuilderAsItWas renders each builder of llm that
// renders another twice and checks that neither its own state nor the
// inner job's changed: the image default and the DeepSpeed configuration
// are computed for the rendering, not stored.
func TestObjectsLeavesTheBuilderAsItWas(t *testing.T) {
	data := datasets.InstructionData("d", "pvc://data/d.json", datasets.Alpaca)
	ft := SFT("ft", "Qwen/Qwen2.5-7B-Instruct").AddDataset(data).Output("pvc://out/ft").ZeRO(2).Batch(2, 4)
	ft.Job().On(hardware.H100).Accelerators(8)
	merge := ft.Merge("merge", "pvc://out/merged")
	rl := GRPO("rl", "Qwen/Qwen2.5-7B-Instruct").TrainFiles("pvc://data/train.parquet").ValFiles("pvc://data/val.parquet").
		RewardFunction("pvc://code/reward.py", "score").Output("pvc://out/rl")
	rl.Job().On(hardware.H100).Accelerators(8).WorkerGroup("gpu", 1)

	for name, b := range map[string]struct {
		objects func() ([]client.Object, error)
		state   func() any
	}{
		"FineTune": {ft.Objects, func() any { return []any{*ft, *ft.job} }},
		"Export":   {merge.Objects, func() any { return []any{*merge, *merge.job} }},
		"RL":       {rl.Objects, func() any { return []any{*rl, *rl.job} }},
	} {
		t.Run(name, func(t *testing.T) {
			before := b.state()
			first, err := b.objects()
			require.NoError(t, err)
			assert.True(t, reflect.DeepEqual(before, b.state()), "Objects changed the builder")
			second, err := b.objects()
			require.NoError(t, err)
			assert.Equal(t, first, second, "a second Objects renders something else")
			assert.True(t, reflect.DeepEqual(before, b.state()), "the second Objects changed the builder")
		})
	}
}
