// Package argo compiles a pipeline (package pipeline) to Argo Workflows
// v3.7 and reads their status. Import it to run a pipeline on a cluster:
//
//	p := pipeline.New("llm-flow").Kinds(train.Kinds()...).Step(prepare, train, evaluate)
//	rel, err := client.Apply(ctx, argo.Workflow(p))                   // one run
//	rel, err = client.Apply(ctx, argo.CronWorkflow(p, "0 2 * * *"))  // on a schedule
//	wf, err := argo.Workflow(p).Build()                               // the typed wfv1.Workflow
//
// Workflow(p) is a cube.Workload whose Build (and Objects) returns a typed
// wfv1.Workflow: one DAG template named after the pipeline, one template
// per step (a container template, or a resource template that creates the
// job with setOwnerReference and waits on its completion conditions),
// output parameters read from files (valueFrom.path), inputs passed as
// {{tasks.X.outputs.parameters.Y}}, a per-run workspace claim
// (volumeClaimTemplates), retryStrategy, activeDeadlineSeconds, when,
// withItems/withParam (with a DAG of its own for a bounded fan-out),
// onExit, parallelism, ttlStrategy, podGC, the service account and labels.
// The job of a workload step and its pods join the pipeline's release
// (cube.dev/release), so Release.Wait on the pipeline reports their pods'
// problems; a step's ActiveDeadline is also the job's own deadline, so the
// job stops with the step. A serving step (pipeline.Serve) is a resource
// template that creates the Deployment or LeaderWorkerSet (action create,
// which never overwrites an object of the same name: a run that finds one
// fails the step; no owner reference, so it serves after the run and
// after the Workflow is deleted) and succeeds once spec.replicas of it are available
// (successCondition on status.availableReplicas or status.readyReplicas);
// its Service and the objects around it are applied with the Workflow.
// ExecutorRBAC adds the ServiceAccount, Role and
// RoleBinding Argo's executor needs. The workspace is ReadWriteMany unless
// its pods mount it one at a time (see pipeline.Workspace).
// CronWorkflow(p, cron...) compiles the same pipeline to a CronWorkflow.
//
// Besides the graph's own problems (see package pipeline), Build refuses a
// function step (it runs only locally), a job kind the pipeline has no
// completion for and a serving workload in a workload step (it never
// completes), each with a field path.
//
// Kinds returns the status readers for Workflow (Pending and Running are
// in progress, Succeeded, Failed and Error) and CronWorkflow (ready): a
// cube.Client given them (cube.Kinds(argo.Kinds()...), or kinds.All())
// follows a pipeline's release with Release.Wait like any other workload.
// A client without them reads a Workflow Unknown, and Wait for it fails at
// once with cube.ErrNeverReaches.
package argo
