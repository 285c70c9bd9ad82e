package milvus_test

import (
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube/rag"
	"github.com/cubestudio/cube/rag/milvus"
)

// A rag.Filter becomes the boolean expression Milvus evaluates.
func ExampleExpr() {
	expr, _ := milvus.Expr(rag.Filter{"source": "quotas.md", "team": "nlp"})
	fmt.Println(expr)
	_, err := milvus.Expr(rag.Filter{"team name": "nlp"})
	fmt.Println(err)
	// Output:
	// source == "quotas.md" && metadata["team"] == "nlp"
	// filter: metadata key "team name": only letters, digits and _ . - / reach Milvus's JSON path
}

// The environment of a pod that reaches Milvus: credentials by reference
// to a Secret, never as values.
func ExampleEnv() {
	b, _ := yaml.Marshal(milvus.Env("milvus-nlp", "nlp_handbook", 384))
	fmt.Print(string(b))
	// Output:
	// - name: MILVUS_ADDRESS
	//   valueFrom:
	//     secretKeyRef:
	//       key: address
	//       name: milvus-nlp
	// - name: MILVUS_TOKEN
	//   valueFrom:
	//     secretKeyRef:
	//       key: token
	//       name: milvus-nlp
	// - name: MILVUS_COLLECTION
	//   value: nlp_handbook
	// - name: MILVUS_DIMENSIONS
	//   value: "384"
}
