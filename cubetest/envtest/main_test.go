package envtest_test

import (
	"testing"

	"github.com/cubestudio/cube/cubetest/envtest"
)

func TestMain(m *testing.M) { envtest.Main(m) }
