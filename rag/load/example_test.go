package load_test

import (
	"fmt"
	"strings"

	"github.com/cubestudio/cube/rag/load"
)

func ExampleMarkdown() {
	docs, err := load.Markdown("quotas.md", strings.NewReader("# GPU quotas\n\nEach team gets 8 GPUs.\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(docs[0].Source, "|", docs[0].Title, "|", docs[0].Metadata["format"])
	// Output: quotas.md | GPU quotas | markdown
}

func ExampleCSV() {
	docs, err := load.CSV("models.csv", strings.NewReader("name,team\nqwen,nlp\nyolo,vision\n"), "team")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range docs {
		fmt.Printf("%q team=%s at byte %d\n", d.Text, d.Metadata["team"], d.Offset)
	}
	_, err = load.Text(" ", strings.NewReader("x"))
	fmt.Println(err)
	// Output:
	// "name: qwen\nteam: nlp" team=nlp at byte 10
	// "name: yolo\nteam: vision" team=vision at byte 19
	// load text: source: required: the name chunks and citations carry
}
