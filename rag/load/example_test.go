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
		fmt.Printf("%q team=%s on line %s\n", d.Text, d.Metadata["team"], d.Metadata["line"])
	}
	_, err = load.Text(" ", strings.NewReader("x"))
	fmt.Println(err)
	// Output:
	// "name: qwen\nteam: nlp" team=nlp on line 2
	// "name: yolo\nteam: vision" team=vision on line 3
	// load text: source: required: the name chunks and citations carry
}

func ExampleJSONL() {
	in := `{"id":"faq-1","text":"A team gets 8 GPUs.","title":"Quotas"}
{"text":"Ask the platform team for more."}
`
	docs, err := load.JSONL("faq.jsonl", strings.NewReader(in), "")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range docs {
		fmt.Printf("%s %q line %s\n", d.Source, d.Title, d.Metadata["line"])
	}
	// Output:
	// faq.jsonl#faq-1 "Quotas" line 1
	// faq.jsonl "" line 2
}
