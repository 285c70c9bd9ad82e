// Command tuning is cube's hyperparameter-search journey: one search space
// and objective, run first in-process by the local tuner against a
// simulated training run (learning curves reported step by step, median
// stopping cutting the bad ones short), then rendered as the Katib
// Experiment that runs the same search on a cluster, each trial a
// PyTorchJob.
//
// It needs no cluster: it prints the local study's outcome as YAML comments
// and the Experiment as YAML that `kubectl apply -f -` accepts.
//
//	go run ./examples/tuning
package main
