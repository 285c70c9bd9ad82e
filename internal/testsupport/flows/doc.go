// Package flows holds the pipelines and workloads the tests of pipeline,
// pipeline/argo and pipeline/local share (a batch Job, a PyTorchJob, the
// LLM flow, a diamond), and the helpers that compare a validation error's
// field paths with what a test wants. It is test support: no production
// package imports it.
package flows
