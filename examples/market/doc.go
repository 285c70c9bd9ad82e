// Command market is cube's model-market journey on the embedded registry:
// fine-tune a catalogue model (the training workload is a PyTorchJob behind
// market's Trainer seam) and register the result with its lineage,
// evaluate it with lm-evaluation-harness, promote it to production and
// roll a vLLM serving release to it, sized by the planner.
//
// It needs no cluster. The registry is a bbolt file in a temporary
// directory (or -registry PATH). The evaluation's scores are read from a
// stand-in lm-eval results file, since no harness runs here; on a cluster
// RecordEvaluation reads them from the evaluation Job. It prints the
// journey as YAML comments and the workloads it would apply — the
// PyTorchJob, the evaluation Job, the serving Deployment and Service — as
// YAML that `kubectl apply -f -` accepts.
//
//	go run ./examples/market
package main
