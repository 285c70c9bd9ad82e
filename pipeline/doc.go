// Package pipeline builds DAGs of steps. It holds the graph only: the
// steps, their settings, the placeholders that move values between them
// and the validation of the whole (names, dependencies, cycles,
// references). Two backends run a pipeline:
//
//   - package pipeline/argo compiles it to an Argo Workflow (v3.7):
//     cube.Client.Apply(ctx, argo.Workflow(p)) runs it once on a cluster,
//     argo.CronWorkflow(p, "0 2 * * *") on a schedule;
//   - package pipeline/local runs it in-process with no cluster:
//     local.Run(ctx, p).
//
// This package imports nothing of Argo.
//
// A pipeline is a list of steps and the dependencies between them:
//
//	prepare := pipeline.Container("prepare").Image("python:3.12").
//		Command("python", "prepare.py", "--out", pipeline.OutputFile("data")).
//		Outputs("data")
//	train := pipeline.Workload("train", pytorchJob) // any cube.Workload whose main object is a job
//	evaluate := pipeline.Container("evaluate").Image("python:3.12").
//		Command("python", "eval.py", "--data", prepare.Output("data")).
//		After(train)
//	p := pipeline.New("llm-flow").Kinds(train.Kinds()...).
//		Param("lr", "3e-4").Step(prepare, train, evaluate)
//	rel, err := client.Apply(ctx, argo.Workflow(p)) // on the cluster
//	res, err := local.Run(ctx, p)                  // or here
//
// There are four kinds of step. A ContainerStep runs one container and
// embeds pod.Builder, so image, command, env, secrets, resources, hardware
// profiles and volumes are set as on every other cube workload. A
// WorkloadStep wraps a cube.Workload (a PyTorchJob, a Volcano Job, a
// RayJob…) and waits for it with the success and failure conditions of its
// kind's cube.Kind: a pipeline is given the kinds its workload steps create
// with Kinds (train.Kinds() for training jobs, kinds.All() for every kind
// cube builds); a batch Job's (cube.CoreKinds) and an Argo Workflow's it
// knows already. A ServeStep applies a serving workload (a serve.Service,
// or any cube.Workload with one Deployment or LeaderWorkerSet) and
// completes once it is available, so that "serve once training succeeded"
// is one pipeline; the service outlives the run, and it runs only on a
// cluster. A FuncStep calls a Go function; it runs only locally.
//
// Values move between steps through placeholders: ParamRef(name) for
// pipeline parameters, step.Output(name) for another step's output (which
// also makes the step depend on it), OutputFile(name) for the file a
// container step writes an output to ($CUBE_OUTPUTS/NAME), ItemRef and
// ItemField for fan-out items, WorkspaceDir for the shared workspace and
// PipelineStatus in the exit handler. After adds dependencies on side
// effects. Steps can retry (Retry with a retry.Policy, RetryOn for which
// failures count), time out, run When a condition holds, and fan out with
// ForEach (a list) or ForEachIn (a JSON list from a parameter or an
// output), Parallelism at a time.
//
// Settings that only a cluster reads (ServiceAccount, PodGC,
// TTLAfterFinished) are recorded here with cube's own types and mapped by
// pipeline/argo; a local run ignores them. Nothing is validated while the
// pipeline is built: each backend reports every problem at once, with a
// field path: a dependency cycle ("a → b → a"), an unknown dependency, a
// bad or duplicate step name (Argo's template name rule), a reference to an
// output that does not exist, an empty pipeline, a nil pipeline or step. A
// nested workload's own errors keep their paths under the step
// (steps[1].workload.spec.replicas).
//
// DOT and Mermaid draw any pipeline, valid or not; local.Result.DOT and
// Mermaid draw a finished run coloured by step status.
package pipeline
