// Package models holds the facts about model architectures that cube's
// planners size hardware from: parameter counts, layers, attention heads,
// the KV cache per token, mixture-of-experts and MLA shapes, encoders and
// vision towers, and the value formats (DType) weights and caches are kept
// in. It is a leaf: it imports no Kubernetes client and no store, so that
// serving and fine-tuning can size a model without the model market.
//
// The catalogue holds published models, read from their config.json
// (testdata/SOURCES.md says where each came from):
//
//	m, err := models.Lookup("Qwen/Qwen2.5-7B-Instruct")
//	weights := m.WeightBytes(models.BF16)
//
// A model not in the catalogue is described by hand, or read from its
// config.json with FromHFConfig.
package models
