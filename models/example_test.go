package models_test

import (
	"fmt"

	"github.com/cubestudio/cube/models"
)

// Lookup finds a catalogue model by its Hugging Face id or its short name,
// in any case.
func ExampleLookup() {
	m, err := models.Lookup("qwen2.5-7b-instruct")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.HFID, m.Architecture, m.Layers, "layers")
	fmt.Printf("%.2f B parameters, %d-token context, %s weights\n", float64(m.Parameters)/1e9, m.ContextLength, m.DType)

	_, err = models.Lookup("no-such/model")
	fmt.Println(err != nil)
	// Output:
	// Qwen/Qwen2.5-7B-Instruct qwen2 28 layers
	// 7.62 B parameters, 32768-token context, bf16 weights
	// true
}

// WeightBytes is what the weights take in a format, and KVBytesPerToken
// what each token of context takes in the cache: the two numbers a
// serving planner fits into a device.
func ExampleModel_WeightBytes() {
	m, err := models.Lookup("Qwen/Qwen2.5-7B-Instruct")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range []models.DType{models.BF16, models.FP8, models.INT4} {
		fmt.Printf("%s: %.1f GiB\n", d, float64(m.WeightBytes(d))/(1<<30))
	}
	fmt.Println("KV cache per token in bf16:", m.KVBytesPerToken(models.BF16), "bytes")
	// Output:
	// bf16: 14.2 GiB
	// fp8: 7.1 GiB
	// int4: 3.5 GiB
	// KV cache per token in bf16: 57344 bytes
}

// FromHFConfig reads a model that is not in the catalogue from its
// config.json, counting its parameters from the architecture; a config
// with missing fields is refused with every field named.
func ExampleFromHFConfig() {
	m, err := models.FromHFConfig([]byte(`{
		"_name_or_path": "acme/tiny-llama",
		"model_type": "llama",
		"hidden_size": 2048,
		"intermediate_size": 5632,
		"num_hidden_layers": 22,
		"num_attention_heads": 32,
		"num_key_value_heads": 4,
		"vocab_size": 32000,
		"max_position_embeddings": 2048,
		"torch_dtype": "bfloat16"
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.HFID, m.Architecture, m.DType, m.ContextLength)
	fmt.Printf("%.2f B parameters\n", float64(m.Parameters)/1e9)

	_, err = models.FromHFConfig([]byte(`{"model_type": "llama", "hidden_size": 2048}`))
	fmt.Println(err)
	// Output:
	// acme/tiny-llama llama bf16 2048
	// 1.10 B parameters
	// [num_hidden_layers: Required value, num_attention_heads: Required value, vocab_size: Required value, intermediate_size: Required value: dense models need the FFN width]
}
