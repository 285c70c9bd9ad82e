package cli_test

import (
	"context"
	"fmt"
	"os"

	"github.com/cubestudio/cube/cmd/kubectl-cube/internal/cli"
)

// Run is the plugin without its process: the arguments after
// "kubectl cube", the two streams, and the exit code back. plan needs no
// cluster.
func ExampleRun() {
	code := cli.Run(context.Background(), []string{"plan", "serve", "Qwen/Qwen2.5-7B-Instruct", "--on", "H100"}, os.Stdout, os.Stdout)
	fmt.Println("exit code", code)
	// Output:
	// Qwen2.5-7B-Instruct on H100-SXM-80GB: TP=1 × PP=1, 1 node × 1 device
	//   per device: 71.7 GiB usable (0.9 of 79.6 GiB) = 14.2 GiB weights (bf16) + 1.2 GiB activations + 56.3 GiB KV cache (bf16); 8.0 GiB outside for runtime, NCCL and CUDA graphs
	//   KV cache: 56 KiB a token per device (model: 56 KiB a token), 65933 blocks of 16 = 1054928 tokens
	//   at 32768 tokens a sequence: 32 sequences at once
	// exit code 0
}

// A bad flag is an error on stderr that names it, and exit code 1.
func ExampleRun_badFlag() {
	code := cli.Run(context.Background(), []string{"plan", "serve", "Qwen/Qwen2.5-7B-Instruct", "--on", "A100"}, os.Stdout, os.Stdout)
	fmt.Println("exit code", code)
	// Output:
	// error: --on "A100": names several profiles (A100-SXM-40GB, A100-SXM-80GB); give one
	// exit code 1
}
