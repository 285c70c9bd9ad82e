// Command kubectl-cube is the kubectl plugin of cube: `kubectl cube` lists
// the releases cube applied, says where each stands and why, streams their
// logs, waits on them, deletes them, and prints what cube would apply and
// what its planners answer, with the same library calls a program makes.
//
// Install it where kubectl finds plugins (any directory on PATH):
//
//	go install github.com/cubestudio/cube/cmd/kubectl-cube@latest
//
// Usage:
//
//	kubectl cube list [--kind K] [--state S] [-n NS | -A] [-o json]
//	kubectl cube status NAME [-n NS] [-o json]
//	kubectl cube logs NAME [-n NS] [-f] [-c CONTAINER] [--tail N] [--since D] [-p]
//	kubectl cube wait NAME --for Ready|Succeeded [--timeout D] [--fail-on-stuck-pods]
//	kubectl cube delete NAME [-n NS]
//	kubectl cube render serve MODEL --on PROFILE [--name N] [--engine vllm|sglang]
//	kubectl cube render finetune MODEL --on PROFILE --dataset [NAME=]URI --output URI
//	kubectl cube plan serve MODEL --on PROFILE [--context-length N]
//	kubectl cube plan finetune MODEL --on PROFILE --dataset [NAME=]URI [--accelerators N --zero S]
//
// The cluster is chosen as kubectl chooses it: --kubeconfig, else the
// KUBECONFIG variable, else ~/.kube/config, else the pod's service account
// in a cluster; --context picks a context and -n a namespace (default: the
// context's). render and plan need no cluster. A profile is a hardware
// catalogue name (H100-SXM-80GB) or a prefix that names one profile (H100);
// a model is a catalogue name or a Hugging Face id.
//
// list and status print tables; -o json prints the same as data (the
// release, its phase and reason, each object's phase, the refused pods,
// the stuck pods and why its jobs wait in Kueue) for scripts and jq.
//
// The exit code is 0 on success and 1 on any error, which is written to
// stderr naming the flag or argument at fault. wait exits 1 when the release
// fails, cannot reach the phase or the timeout passes; plan exits 1 when the
// model does not fit. Every command takes --help.
//
// The commands live in package internal/cli, whose Run the tests call
// in-process against a real kube-apiserver.
package main
