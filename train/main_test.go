package train_test

import (
	"testing"

	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

// TestMain stops the test API server the package's tests start.
func TestMain(m *testing.M) { testenv.Main(m) }
