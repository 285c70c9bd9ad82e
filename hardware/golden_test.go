package hardware_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
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
			path := filepath.Join("testdata", c.name+".golden")
			if *update {
				require.NoError(t, os.WriteFile(path, got, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test -update to create %s", path)
			require.Equal(t, string(want), string(got))
		})
	}
}
