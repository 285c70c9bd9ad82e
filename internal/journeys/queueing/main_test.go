package queueing

import (
	"testing"

	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
