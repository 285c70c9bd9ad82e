package main

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cubestudio/cube"
	_ "github.com/cubestudio/cube/llm"
	_ "github.com/cubestudio/cube/pipeline"
	_ "github.com/cubestudio/cube/serve"
	_ "github.com/cubestudio/cube/train"
	_ "github.com/cubestudio/cube/tune"
)

func main() {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(os.Args[1])); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	st := cube.ReadStatus(u)
	fmt.Println(st.Phase, st.Reason)
}
