package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"os/signal"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/train"
	"github.com/cubestudio/cube/tune"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// experiment is the search: the same value serves the local tuner and Katib.
func experiment() *tune.Experiment {
	job := train.PyTorch("mnist").
		Image("pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime").
		Torchrun("mnist.py", "--epochs", "10").
		Workers(1)
	return tune.New("mnist-search").
		Namespace("team-a").
		Objective(tune.Minimize("loss").Also("accuracy")).
		Algorithm(tune.TPE().Seed(7)).
		EarlyStop(tune.MedianStop().MinTrials(5).StartStep(3)).
		Param(
			tune.Float("lr", 1e-5, 1e-1).Log(),
			tune.Float("momentum", 0.5, 0.99),
			tune.Choice("optimizer", "sgd", "adam"),
		).
		Trial(job, tune.Arg("lr", "--lr"), tune.Arg("momentum", "--momentum"), tune.Env("optimizer", "OPTIMIZER")).
		Parallelism(4).MaxTrials(40).MaxFailedTrials(3)
}

// simulatedTraining stands in for mnist.py: a loss curve over ten epochs
// whose floor depends on the hyperparameters (best near lr=3e-3,
// momentum=0.9 with adam), reported each epoch so median stopping can act.
func simulatedTraining(_ context.Context, t *tune.Trial) (float64, error) {
	floor := math.Pow(math.Log10(t.Float("lr"))+2.5, 2)/4 + math.Pow(t.Float("momentum")-0.9, 2)*4
	if t.String("optimizer") == "sgd" {
		floor += 0.15
	}
	var loss float64
	for epoch := 1; epoch <= 10; epoch++ {
		loss = floor + 2/float64(epoch+1)
		if err := t.Report(loss); err != nil {
			return 0, err
		}
	}
	return loss, nil
}

func run(ctx context.Context, out io.Writer) error {
	exp := experiment()
	res, err := tune.LocalFrom(exp).Run(ctx, simulatedTraining)
	if err != nil {
		return fmt.Errorf("local study: %w", err)
	}
	stopped := 0
	for _, r := range res.Trials {
		if r.State == tune.EarlyStopped {
			stopped++
		}
	}
	fmt.Fprintf(out, "# local study: %d trials, %d stopped early by medianstop\n", len(res.Trials), stopped)
	fmt.Fprintf(out, "# best loss %.4f: lr=%.2e momentum=%.3f optimizer=%s\n",
		res.Best.Value, res.Best.Float("lr"), res.Best.Float("momentum"), res.Best.String("optimizer"))
	fmt.Fprintln(out, "# the same search as a Katib Experiment, each trial a PyTorchJob:")
	return cube.Render(out, exp)
}
