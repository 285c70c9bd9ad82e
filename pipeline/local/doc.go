// Package local runs a pipeline step's work on this machine: a command as a
// process in its own process group, killed with everything it started when
// its context ends (Run), and the command a workload's job would run
// (Command). pipeline's local runner and tune's local tuner both run their
// processes here; the package imports nothing of Argo, so a program that
// only runs things locally does not pull in the Workflow types.
//
//	argv, _ := local.Command(job) // a Job's, RayJob's or PyTorchJob's main command
//	err := local.Run(ctx, argv, os.Environ(), logFile)
package local
