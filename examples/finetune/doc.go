// Command finetune is cube's fine-tuning journey: labeled instruction
// data (Alpaca records, the format a labeling export writes) on a claim →
// a LoRA SFT of Qwen2.5-7B-Instruct with LLaMA-Factory, planned for the
// cheapest H100 layout and evaluated on a held-out split while it trains
// → a DPO pass on preference pairs, starting from the SFT adapter → the
// base model served by vLLM with the aligned adapter.
//
// Without flags it needs no cluster: it prints the plan as YAML comments
// and every object as YAML that `kubectl apply -f -` accepts. With -apply
// it applies each release to the cluster KUBECONFIG points at, waits for
// the training runs to succeed and the service to be ready.
//
//	go run ./examples/finetune
//	go run ./examples/finetune -apply -namespace team-nlp
package main
