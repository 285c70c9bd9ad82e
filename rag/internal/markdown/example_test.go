package markdown_test

import (
	"fmt"

	"github.com/cubestudio/cube/rag/internal/markdown"
)

func ExampleHeadings() {
	src := "# Install\n\n```\n# not a heading\n```\n\nDebian *and* Ubuntu\n---\n"
	for _, h := range markdown.Headings([]byte(src)) {
		fmt.Printf("%d %q %q\n", h.Level, h.Title, src[h.Start:h.End])
	}
	// Output:
	// 1 "Install" "# Install"
	// 2 "Debian and Ubuntu" "Debian *and* Ubuntu\n---"
}
