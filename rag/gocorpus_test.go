package rag

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/printer"
	"go/token"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/cubestudio/cube/rag/internal/lex"
)

// The Go reference benchmark: a known-item benchmark built on a fresh
// machine from what the Go installation contains, shaped like the one of
// issue 32 (many near-duplicate versions of the same technical reference
// pages, short natural-language questions, one relevant page each).
//
// Pages. Every exported function and every exported type of the standard
// library packages under $GOROOT/src (not cmd, internal, vendor or
// testdata) becomes a Markdown reference page: "# pkg.Name", a line naming
// the package and the release, the declaration, its doc comment, and for a
// type one "## func (recv) Method" section per exported method with that
// method's declaration and doc comment. The standard library's own
// near-duplicates (bytes and strings, math/rand and math/rand/v2,
// text/template and html/template) stay in.
//
// Versions. A page is published in 1 to 5 releases (chosen by a hash of its
// name). Release r of a page is the same page with systematic edits: its
// release line says "Go reference, release 1.r"; every sentence whose
// position in the page is ≡ r (mod 7) is dropped (older releases lack it);
// release r ≥ 3 spells "returns" as "gives" and "reports whether" as
// "tells if"; an odd release adds a line "Changed in release 1.r: the
// documentation was revised." Versions differ by a few words and share
// the rest.
//
// Questions. One question per chosen target, a (page, release, member)
// picked by hash: the member is the page's function or one of its
// methods, the question is written from the first sentence of that
// member's doc comment in that release by this rule, which never copies
// the sentence: drop the member's own name, every identifier written in
// camel case or with a digit ("ReadAll", "Int64") and every stop word; replace each remaining word found in the synonym
// table below by its synonym; drop every word whose hash is 0 mod 4 (a
// quarter); keep at most 8 words; prefix "how do I" or "what" or nothing
// (by hash) and, for half of the questions, append "in <last element of the
// import path>". A question whose rule leaves fewer than 3 words is not
// asked. The relevant page is the target release's page; the others,
// near-duplicates included, are not relevant.

// synonyms maps a documentation word to what a user might write instead.
var synonyms = map[string]string{
	"returns": "gives", "return": "give", "reports": "tells", "whether": "if", "removed": "stripped",
	"removes": "deletes", "remove": "delete", "string": "text", "strings": "texts", "slice": "list",
	"length": "size", "number": "count", "creates": "makes", "create": "make", "new": "fresh",
	"allocates": "makes", "reads": "loads", "read": "load", "writes": "stores", "write": "store",
	"calls": "invokes", "call": "invoke", "error": "failure", "errors": "failures", "value": "result",
	"values": "results", "specified": "given", "contains": "has", "contain": "have", "first": "initial",
	"last": "final", "byte": "octet", "bytes": "octets", "function": "func", "returned": "given back",
	"sets": "configures", "set": "configure", "closes": "shuts", "close": "shut", "file": "document",
	"files": "documents", "directory": "folder", "encodes": "serializes", "decodes": "parses",
	"encoding": "serialization", "decoding": "parsing", "copy": "duplicate", "copies": "duplicates",
	"buffer": "buf", "integer": "int", "characters": "chars", "character": "char", "empty": "blank",
	"leading": "starting", "trailing": "ending", "removing": "stripping", "starts": "begins",
	"ends": "finishes", "begins": "starts", "wait": "block", "waits": "blocks", "stops": "halts",
	"current": "present", "underlying": "wrapped", "instance": "object", "pointer": "reference",
	"connection": "conn", "connections": "conns", "request": "req", "response": "reply",
	"timeout": "deadline", "parses": "interprets", "parse": "interpret", "formats": "renders",
	"format": "render", "compares": "checks", "equal": "same", "random": "pseudo random",
	"converts": "turns", "convert": "turn", "description": "summary", "appends": "adds",
	"append": "add", "delete": "drop", "deletes": "drops", "returning": "giving",
}

// goPage is one release of one reference page.
type goPage struct {
	source, text string
}

// goQuestion is a question and the source of its one relevant page.
type goQuestion struct {
	text, relevant string
}

type goMember struct {
	name, decl, docText string
}

type goSymbol struct {
	pkgPath, pkgName, name string
	decl, docText          string
	methods                []goMember
}

func fnvHash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// goReferenceCorpus builds the benchmark from the packages under
// $GOROOT/src whose import path is in pkgs (every eligible package when
// pkgs is nil), keeps at most maxSymbols symbols (chosen by hash) and asks
// at most maxQuestions questions.
func goReferenceCorpus(t testing.TB, pkgs []string, maxSymbols, maxQuestions int) ([]goPage, []goQuestion) {
	t.Helper()
	root := filepath.Join(runtime.GOROOT(), "src")
	if _, err := os.Stat(filepath.Join(root, "strings")); err != nil {
		t.Fatalf("the Go reference benchmark reads $GOROOT/src: %v", err)
	}
	if pkgs == nil {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			base := d.Name()
			if p != root && (base == "cmd" || base == "internal" || base == "vendor" || base == "testdata" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
				return filepath.SkipDir
			}
			if p != root {
				pkgs = append(pkgs, rel)
			}
			return nil
		})
	}
	sort.Strings(pkgs)
	var syms []goSymbol
	for _, path := range pkgs {
		syms = append(syms, goSymbols(filepath.Join(root, filepath.FromSlash(path)), path)...)
	}
	sort.Slice(syms, func(i, j int) bool {
		hi, hj := fnvHash(syms[i].pkgPath+"."+syms[i].name), fnvHash(syms[j].pkgPath+"."+syms[j].name)
		if hi != hj {
			return hi < hj
		}
		return syms[i].pkgPath+"."+syms[i].name < syms[j].pkgPath+"."+syms[j].name
	})
	if len(syms) > maxSymbols {
		syms = syms[:maxSymbols]
	}
	var pages []goPage
	var questions []goQuestion
	for _, s := range syms {
		key := s.pkgPath + "." + s.name
		h := fnvHash(key)
		releases := 1 + int(h%5)
		for r := 1; r <= releases; r++ {
			pages = append(pages, goPage{source: fmt.Sprintf("go1.%d/%s.md", r, key), text: s.page(r)})
		}
		members := append([]goMember{{s.name, s.decl, s.docText}}, s.methods...)
		m := members[int((h>>8)%uint64(len(members)))]
		r := 1 + int((h>>16)%uint64(releases))
		if q := question(m, release(m.docText, r), s.pkgPath, h>>24); q != "" {
			questions = append(questions, goQuestion{text: q, relevant: fmt.Sprintf("go1.%d/%s.md", r, key)})
		}
	}
	sort.Slice(questions, func(i, j int) bool { return fnvHash(questions[i].text) < fnvHash(questions[j].text) })
	if len(questions) > maxQuestions {
		questions = questions[:maxQuestions]
	}
	return pages, questions
}

// goSymbols reads the exported functions and types of the package in dir.
func goSymbols(dir, path string) []goSymbol {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		return nil
	}
	var out []goSymbol
	for name, p := range pkgs {
		if name == "main" || strings.HasSuffix(name, "_test") {
			continue
		}
		dp := doc.New(p, path, 0)
		decl := func(n ast.Node) string {
			var b strings.Builder
			switch d := n.(type) {
			case *ast.FuncDecl:
				d2 := *d
				d2.Body, d2.Doc = nil, nil
				n = &d2
			}
			_ = printer.Fprint(&b, fset, n)
			return b.String()
		}
		for _, f := range dp.Funcs {
			if f.Doc != "" {
				out = append(out, goSymbol{pkgPath: path, pkgName: dp.Name, name: f.Name, decl: decl(f.Decl), docText: f.Doc})
			}
		}
		for _, ty := range dp.Types {
			if ty.Doc == "" {
				continue
			}
			s := goSymbol{pkgPath: path, pkgName: dp.Name, name: ty.Name, decl: "type " + ty.Name, docText: ty.Doc}
			for _, f := range append(append([]*doc.Func(nil), ty.Funcs...), ty.Methods...) {
				if f.Doc != "" && ast.IsExported(f.Name) {
					s.methods = append(s.methods, goMember{name: f.Name, decl: decl(f.Decl), docText: f.Doc})
				}
			}
			out = append(out, s)
		}
	}
	return out
}

// page renders release r of the symbol's reference page.
func (s goSymbol) page(r int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s.%s\n\nPackage %s (import %q) · Go reference, release 1.%d\n\n", s.pkgName, s.name, s.pkgName, s.pkgPath, r)
	fmt.Fprintf(&b, "    %s\n\n%s\n", s.decl, release(s.docText, r))
	if r%2 == 1 {
		fmt.Fprintf(&b, "\nChanged in release 1.%d: the documentation was revised.\n", r)
	}
	for _, m := range s.methods {
		fmt.Fprintf(&b, "\n## %s\n\n    %s\n\n%s\n", m.decl, m.decl, release(m.docText, r))
	}
	return b.String()
}

// release applies release r's edits to a doc comment: sentences at
// positions ≡ r (mod 7) are dropped (never the only one), and release 3
// and later rewords two phrases.
func release(text string, r int) string {
	sents := docSentences(text)
	var kept []string
	for i, s := range sents {
		if len(sents) > 1 && i%7 == r%7 {
			continue
		}
		kept = append(kept, s)
	}
	out := strings.Join(kept, " ")
	if r >= 3 {
		out = strings.ReplaceAll(out, "reports whether", "tells if")
		out = strings.ReplaceAll(out, "returns", "gives")
	}
	return out
}

// docSentences splits a doc comment at ". " and line ends after a period.
func docSentences(text string) []string {
	text = strings.Join(strings.Fields(text), " ")
	var out []string
	for text != "" {
		i := strings.Index(text, ". ")
		if i < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i+1])
		text = text[i+2:]
	}
	return out
}

// question writes the question for member m from the first sentence of
// its release text, by the rule in the comment at the top of this file.
func question(m goMember, text, pkgPath string, h uint64) string {
	sents := docSentences(text)
	if len(sents) == 0 {
		return ""
	}
	var words []string
	for _, raw := range strings.Fields(sents[0]) {
		w := strings.TrimFunc(raw, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if w == "" || w == m.name || hasInnerUpperOrDigit(w) {
			continue
		}
		lw := strings.ToLower(w)
		if lex.Stop(lw) || strings.EqualFold(w, m.name) {
			continue
		}
		if syn, ok := synonyms[lw]; ok {
			lw = syn
		}
		if fnvHash(lw)%4 == 0 {
			continue
		}
		words = append(words, lw)
		if len(words) == 8 {
			break
		}
	}
	if len(words) < 3 {
		return ""
	}
	q := strings.Join(words, " ")
	switch h % 3 {
	case 0:
		q = "how do I " + q
	case 1:
		q = "what " + q
	}
	if (h>>2)%2 == 0 {
		q += " in " + pkgPath[strings.LastIndex(pkgPath, "/")+1:]
	}
	return q
}

// hasInnerUpperOrDigit reports a Go identifier such as "ReadAll" or
// "Int64" (an upper-case letter or digit after the first letter).
func hasInnerUpperOrDigit(w string) bool {
	for i, r := range w {
		if i > 0 && (unicode.IsUpper(r) || unicode.IsDigit(r)) {
			return true
		}
	}
	return false
}
