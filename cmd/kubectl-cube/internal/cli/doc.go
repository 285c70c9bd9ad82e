// Package cli is the command line of kubectl-cube, the kubectl plugin of
// cube: list, status, logs, wait, delete, render and plan. Each command
// makes the calls a program using cube makes (cube.Client's Releases and
// Release, Release.Status, Wait, Logs and Delete, cube.Render, serve.AutoPlan,
// llm.Plan and llm.Check) and prints what they return.
//
// Run is the whole program without the process around it, so that tests run
// the commands in-process against a real API server:
//
//	code := cli.Run(ctx, []string{"status", "qwen-chat", "-n", "team-a"}, os.Stdout, os.Stderr)
package cli
