// Package proc runs work on this machine: a command as a process in its own
// process group, killed with everything it started when its context ends
// (Run), and the command a workload's job would run (Command). The local
// pipeline backend (pipeline/local) and tune's local tuner both run their
// processes here; the package imports nothing of Argo.
//
//	argv, _ := proc.Command(job) // a Job's, RayJob's or PyTorchJob's main command
//	err := proc.Run(ctx, argv, os.Environ(), logFile)
package proc
