// Command mlbackend serves cube's ML backend for Label Studio: the
// label.Backend that label.BackendFromEnv builds from the environment an
// MLBackend workload sets (OPENAI_BASE_URL, OPENAI_MODEL, OPENAI_API_KEY,
// EMBEDDINGS_BASE_URL, EMBEDDINGS_MODEL, MODEL_VERSION, BASIC_AUTH_USER,
// BASIC_AUTH_PASS), on label.BackendPort (9090). It stops gracefully on
// SIGTERM, as the kubelet sends it.
//
// The test cluster's image of it (testenv.Images.LabelBackend) is what
// label's cluster test deploys with label.MLBackend; a team builds the same
// program into its own image:
//
//	go build -o mlbackend github.com/cubestudio/cube/label/labeltest/cmd/mlbackend
//	label.MLBackend("labeler", "registry.example.com/mlbackend:1").Model(url, "qwen") // url, err := serve.URL(svc)
package main
