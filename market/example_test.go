package market_test

import (
	"errors"
	"fmt"

	"github.com/cubestudio/cube/market"
)

func ExampleLookup() {
	m, err := market.Lookup("Qwen/Qwen2.5-7B-Instruct")
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %d layers, %d/%d heads, %.2f B parameters, %d KiB KV per token\n",
		m.Name, m.Layers, m.AttentionHeads, m.KVHeads, float64(m.Parameters)/1e9, m.KVBytesPerToken(market.BF16)>>10)

	_, err = market.Lookup("gpt-4")
	fmt.Println(errors.Is(err, market.ErrUnknownModel))
	// Output:
	// Qwen2.5-7B-Instruct: 28 layers, 28/4 heads, 7.62 B parameters, 56 KiB KV per token
	// true
}

func ExampleFromHFConfig() {
	config := []byte(`{
	  "_name_or_path": "acme/support-bot-8b",
	  "model_type": "llama",
	  "hidden_size": 4096,
	  "intermediate_size": 14336,
	  "num_hidden_layers": 32,
	  "num_attention_heads": 32,
	  "num_key_value_heads": 8,
	  "vocab_size": 128256,
	  "max_position_embeddings": 131072,
	  "torch_dtype": "bfloat16"
	}`)
	m, err := market.FromHFConfig(config)
	if err != nil {
		panic(err)
	}
	fmt.Println(m.HFID, m.Parameters, m.DType, m.ContextLength)

	_, err = market.FromHFConfig([]byte(`{"num_hidden_layers": "32", "hidden_size": 4096}`))
	fmt.Println(err)
	// Output:
	// acme/support-bot-8b 8030261248 bf16 131072
	// [num_hidden_layers: Invalid value: "32": must be a number, num_attention_heads: Required value, vocab_size: Required value, intermediate_size: Required value: dense models need the FFN width]
}
