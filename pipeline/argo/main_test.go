package argo_test

import (
	"testing"

	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// nilPipeline is what the builders say of a nil *pipeline.Pipeline.
const nilPipeline = "pipeline: the *Pipeline is nil: make one with pipeline.New"
