// Package datasets describes the datasets a fine-tune trains on: where the
// records are (Source), their layout (Format: Alpaca or ShareGPT, as
// LLaMA-Factory's data/README.md gives them) and what they teach (Kind:
// instructions, preference pairs or KTO labels). Package llm renders a
// Dataset into LLaMA-Factory's dataset_info.json; package label exports
// annotations as records of one Format and names them with a Dataset.
//
// It is a leaf: it imports only the standard library, so that writing a
// dataset needs no Kubernetes client or training operator.
//
//	d := datasets.InstructionData("support", "pvc://datasets/support.json", datasets.Alpaca)
//	ft := llm.SFT("support-bot", "Qwen/Qwen2.5-7B-Instruct").AddDataset(d)
package datasets
