// Package pipeline builds DAGs of steps, compiles them to Argo Workflows
// (v3.7) and runs them in-process with no cluster.
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
//
// There are three kinds of step. A ContainerStep runs one container and
// embeds pod.Builder, so image, command, env, secrets, resources, hardware
// profiles and volumes are set as on every other cube workload. A
// WorkloadStep wraps a cube.Workload (a PyTorchJob, a Volcano Job, a RayJob…)
// and waits for it with the success and failure conditions of its kind's
// cube.Kind: a pipeline is given the kinds its workload steps create with
// Kinds (train.Kinds() for training jobs, kinds.All() for every kind cube
// builds); a batch Job's (cube.CoreKinds) and a Workflow's (this package's
// Kinds) it knows already. A FuncStep calls a Go function; it runs only
// locally.
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
// # Compiling for Argo
//
// Build (and Objects: a Pipeline is a cube.Workload) returns a typed
// wfv1.Workflow: one DAG template named after the pipeline, one template per
// step (a container template, or a resource template that creates the job
// with setOwnerReference and waits on its completion conditions), output
// parameters read from files (valueFrom.path), inputs passed as
// {{tasks.X.outputs.parameters.Y}}, a per-run workspace claim
// (volumeClaimTemplates), retryStrategy, activeDeadlineSeconds, when,
// withItems/withParam (with a DAG of its own for a bounded fan-out),
// onExit, parallelism, ttlStrategy, podGC, the service account and labels.
// The job of a workload step and its pods join the pipeline's release
// (cube.dev/release), so Release.Wait on the pipeline reports their pods'
// problems; a step's ActiveDeadline is also the job's own deadline, so the job
// stops with the step. ExecutorRBAC adds the ServiceAccount, Role and
// RoleBinding Argo's executor needs. The workspace is
// ReadWriteMany unless its pods mount it one at a time (see Workspace).
// Schedule compiles the same pipeline to a CronWorkflow. Every problem is
// reported at once with a field path: a dependency cycle ("a → b → a"), an
// unknown dependency, a bad or duplicate step name (Argo's template name rule),
// a reference to an output that does not exist, an empty pipeline, a
// function step, a job kind the pipeline has no completion for, a serving
// workload (it never completes), a nil pipeline or step. A nested
// workload's own errors keep their paths under the step
// (steps[1].workload.spec.replicas).
//
// Kinds returns the package's status readers for Workflow (Pending and
// Running are in progress, Succeeded, Failed and Error) and CronWorkflow
// (ready): a cube.Client given them (cube.Kinds(pipeline.Kinds()...),
// or kinds.All()) follows a pipeline's release with Release.Wait like any
// other workload. A client without them reads a Workflow Unknown, and
// Wait for it fails at once with cube.ErrNeverReaches.
//
// # Running locally
//
// Run runs the same pipeline in-process. Function steps are called;
// container steps run their command as a local subprocess in the caller's
// working directory — the image, resources, hardware and volumes are
// ignored, and env values from Secrets do not exist; workload steps run their
// main container's command once as a single process, or a function given
// with Replace. Dependencies, Parallelism, retries, timeouts, When and
// fan-out behave as in Argo, including failing fast: after a failure no new
// step starts. Parameters, inputs, outputs and each step's log are files in
// the run directory; progress events stream to OnEvent handlers and to a
// terminal printer. Processes run through package pipeline/local, which
// imports nothing of Argo (tune's local tuner uses it alone). A step ends
// cube.Succeeded or cube.Failed, or Skipped, Cached or Omitted.
// Cancelling the context kills the process group of every
// running step. Run again in the same RunDir and the steps whose spec and
// inputs have not changed and that succeeded are skipped (a cache keyed by
// their hash): a failed run resumes where it stopped. A step's hash covers
// its spec, its resolved inputs and the hashes of the steps it depends on,
// so a step that reads an upstream step's workspace files through After
// runs again when that step did. A function step's hash covers its name and
// inputs, not its code.
//
// DOT and Mermaid draw any pipeline; Result.DOT and Result.Mermaid draw a
// finished run coloured by step status.
package pipeline
