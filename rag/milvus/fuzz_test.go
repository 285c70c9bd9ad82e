package milvus

import (
	"encoding/json"
	"testing"

	"github.com/cubestudio/cube/rag"
)

// Any filter Expr accepts becomes an expression that selects exactly the
// rows the filter matches.
func FuzzExpr(f *testing.F) {
	f.Add("source", `a "b" \c`, "team", "nlp")
	f.Add("section", "A > B", "k.v-1/x", "")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		filter := rag.Filter{k1: v1, k2: v2}
		expr, err := Expr(filter)
		if err != nil {
			return
		}
		meta := map[string]string{}
		row := fakeRow{id: "x"}
		for k, v := range filter {
			switch k {
			case "source":
				row.source = v
			case "title":
				row.title = v
			case "section":
				row.section = v
			default:
				meta[k] = v
			}
		}
		row.meta, _ = json.Marshal(meta)
		m, err := match(expr, row)
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		if !m {
			t.Fatalf("%q does not select the row it was built from", expr)
		}
		other := row
		other.source += "!"
		other.title += "!"
		other.section += "!"
		other.meta, _ = json.Marshal(map[string]string{})
		if m, _ := match(expr, other); m && len(filter) > 0 {
			t.Fatalf("%q selects a row that differs in every field", expr)
		}
	})
}
