package market_test

import (
	"os"
	"testing"

	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

func TestMain(m *testing.M) {
	// A test binary started again by the crash test writes versions until
	// it is killed (see crash_test.go).
	if path := os.Getenv(crashWriterEnv); path != "" {
		os.Exit(runCrashWriter(path))
	}
	testenv.Main(m)
}
