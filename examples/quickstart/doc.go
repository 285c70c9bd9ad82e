// Command quickstart is cube's main journey in one program: a team tenant,
// a pipeline prepare → train → evaluate whose training step is a
// distributed PyTorchJob (4 nodes × 8 H100 over InfiniBand), run here as Go
// functions and compiled to an Argo Workflow, and a model server sized by
// the memory planner.
//
// Each workload is applied once: the tenant, the pipeline (Argo creates the
// PyTorchJob as its training step; it is not applied beside it) and the
// served model. With no flags it needs no cluster: it runs the pipeline
// locally and prints those three workloads as YAML that `kubectl apply -f -`
// accepts (commentary goes out as YAML comments, so the whole output stays
// valid YAML). With -apply it applies the same three releases to the
// cluster KUBECONFIG points at and waits for each, failing fast on pods
// that cannot start:
//
//	go run ./examples/quickstart
//	go run ./examples/quickstart -apply -namespace team-nlp -wait 30m
package main
