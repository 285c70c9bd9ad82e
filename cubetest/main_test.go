package cubetest_test

import (
	"testing"

	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

// TestMain stops the test API server the _apiserver_test.go tests start.
func TestMain(m *testing.M) { testenv.Main(m) }
