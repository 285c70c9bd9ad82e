// Command standin-engine stands in for an inference engine image (vLLM with
// Ray) on the test cluster, where no model can run. It is one static binary
// that the image links under the names the serving pods call, and it
// dispatches on the name it was called by:
//
//   - vllm serve MODEL [flags]: package serve/servetest's OpenAI-compatible
//     API on --port (default 8000), the same code users' tests run in
//     process: GET /health, GET /v1/models, POST /v1/chat/completions (also
//     streamed as server-sent events), POST /v1/completions, POST
//     /v1/embeddings, vLLM's score and rerank routes, TEI's /embed and
//     /rerank, and GET /metrics with vLLM's metric names. Chat and
//     completion answers are "standin: " followed by the prompt, so a test
//     can assert on them. The API key, when given, comes from --api-key or
//     VLLM_API_KEY, as vLLM reads it. Flags it does not know are accepted
//     and ignored, as the real command line carries many.
//   - text-embeddings-router [flags], or the image's entrypoint given
//     flags only (TEI's images run the router from their entrypoint): the
//     same server on the --port it is given, for an embedding model (the
//     API key from --api-key or API_KEY, as TEI reads it).
//   - ray start --head --port=P: starts a head in the background that
//     counts the nodes connected to it, and returns.
//   - ray start --address=HOST:P --block: resolves HOST through the pod's
//     DNS (retrying while it does not resolve), joins the head and blocks
//     while the head lives.
//   - python3 -c SCRIPT, where SCRIPT counts Ray nodes (ray.nodes()):
//     prints the number of nodes the local head counts. Any other script is
//     refused.
//
// It is test code, not a product: it exists so that cube's serving objects
// run for real on the test cluster.
package main
