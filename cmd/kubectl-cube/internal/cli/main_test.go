package cli

import (
	"testing"

	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

// TestMain stops the test API server the _apiserver_test.go tests start;
// the other tests never start it.
func TestMain(m *testing.M) { testenv.Main(m) }
