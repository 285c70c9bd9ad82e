package notebook_test

import (
	"testing"

	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

// TestMain stops the test API server that the API-server tests start.
func TestMain(m *testing.M) { testenv.Main(m) }
