// Command quickstart is cube's main journey in one program: a team tenant, a
// distributed training job, a pipeline that runs here and compiles to Argo,
// and a model server sized by the memory planner.
//
// With no flags it needs no cluster: it runs the pipeline locally and prints
// every object as YAML that `kubectl apply -f -` accepts (commentary goes out
// as YAML comments, so the whole output stays valid YAML). With -apply it
// applies each release to the cluster KUBECONFIG points at and waits for it,
// failing fast on pods that cannot start:
//
//	go run ./examples/quickstart
//	go run ./examples/quickstart -apply -namespace team-nlp -wait 30m
package main
