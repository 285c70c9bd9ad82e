package tenant_test

import (
	"testing"

	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

// TestMain stops the test API server that the tests of this package start.
func TestMain(m *testing.M) { testenv.Main(m) }
