package hardware_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube/internal/testsupport/golden"
)

func TestApplyGolden(t *testing.T) {
	for _, c := range applyCases() {
		t.Run(c.name, func(t *testing.T) {
			tmpl, errs := render(c)
			var got []byte
			if len(errs) > 0 {
				got = []byte(errorText(errs))
			} else {
				var err error
				got, err = yaml.Marshal(tmpl)
				require.NoError(t, err)
			}
			golden.Assert(t, c.name+".golden", got)
		})
	}
}
