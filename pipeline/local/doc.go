// Package local runs a pipeline (package pipeline) in-process, with no
// cluster and nothing of Argo:
//
//	res, err := local.Run(ctx, p, local.RunDir(".runs/llm-flow"), local.Progress(os.Stderr))
//
// Function steps are called; container steps run their command as a local
// subprocess in the caller's working directory — the image, resources,
// hardware and volumes are ignored, and env values from Secrets do not
// exist; workload steps run their main container's command once as a
// single process, or a function given with Replace; a serving step is
// refused (it applies a service to a cluster) unless Replace gives a
// function for it. Dependencies,
// Parallelism, retries, timeouts, When and fan-out behave as in Argo,
// including failing fast: after a failure no new step starts. Parameters,
// inputs, outputs and each step's log are files in the run directory;
// progress events stream to OnEvent handlers and to a terminal printer. A
// step ends cube.Succeeded or cube.Failed, or Skipped, Cached or Omitted.
// Cancelling the context kills the process group of every running step.
//
// Run again in the same RunDir and the steps whose spec and inputs have
// not changed and that succeeded are skipped (a cache keyed by their hash):
// a failed run resumes where it stopped. A step's hash covers its spec, its
// resolved inputs and the hashes of the steps it depends on, so a step
// that reads an upstream step's workspace files through After runs again
// when that step did. A function step's hash covers its name and inputs,
// not its code. NoCache runs every step.
//
// Result.DOT and Result.Mermaid draw a finished run coloured by step
// status.
package local
