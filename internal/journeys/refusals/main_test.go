package refusals

import (
	"testing"

	"github.com/cubestudio/cube/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
