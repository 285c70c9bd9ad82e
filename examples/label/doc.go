// Command label is cube's labeling journey, with no network: a stand-in
// Label Studio (label/labeltest, in Label Studio 1.13.1's API shapes) and
// a stand-in OpenAI-compatible model run in-process. It renders the
// Label Studio deployment, creates a pairwise-ranking project, imports
// tasks with two model answers each, auto-labels them through the ML
// backend (label.Preannotate with label.Backend), has two annotators
// review them, measures their agreement and the model's accuracy, lists
// the most uncertain tasks, and exports the accepted choices as a ShareGPT
// preference dataset for llm.DPO.
//
//	go run ./examples/label
package main
