package house

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// forbidden reads the synonyms CONTRIBUTING.md's glossary refuses: the
// backquoted words of the last column of its table. The glossary is the one
// place they are written down; this test holds the module to it.
func forbidden(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(moduleRoot(t), "CONTRIBUTING.md"))
	if err != nil {
		t.Fatalf("read the glossary: %v", err)
	}
	out := map[string]string{}
	inTable := false
	word := regexp.MustCompile("`([A-Za-z]+)`")
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "| concept |") {
			inTable = true
			continue
		}
		if inTable && !strings.HasPrefix(line, "|") {
			break
		}
		if !inTable || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		concept, last := strings.TrimSpace(cells[0]), cells[len(cells)-1]
		for _, m := range word.FindAllStringSubmatch(last, -1) {
			out[m[1]] = concept
		}
	}
	if len(out) < 10 {
		t.Fatalf("the glossary's forbidden column gave only %d words: has its table changed shape?", len(out))
	}
	return out
}

// notSettings are the exported methods a builder may have besides settings.
var notSettings = map[string]bool{"Objects": true, "Build": true}

// derived are the methods that are neither settings nor Objects/Build but
// belong on a builder, each with the reason; a new one needs one here.
var derived = map[string]string{
	"llm.FineTune.Job":              "the inner training job, for the pod settings the fine-tune runs with",
	"llm.RL.Job":                    "the inner RayJob, for the pod settings of the run",
	"llm.Export.Job":                "the inner job, for the pod settings of the merge",
	"llm.FineTune.Serve":            "derives the serving builder for the tuned model",
	"llm.FineTune.Merge":            "derives the export builder that merges the adapter",
	"llm.Export.Serve":              "derives the serving builder for the merged model",
	"market.FineTuneRun.Register":   "an operation on the registry once the run has ended (takes a context)",
	"pipeline.Pipeline.DOT":         "renders the graph as Graphviz; the graph's own output, with no backend",
	"pipeline.Pipeline.Mermaid":     "renders the graph as Mermaid; the graph's own output, with no backend",
	"pipeline.ContainerStep.Output": "the placeholder another step passes to read this step's output",
	"vgpu.Spec.String":              "fmt.Stringer, for messages and logs",
}

// durationWords end the names of settings that take a length of time.
var durationWords = []string{"Timeout", "Deadline", "KeepAlive", "TTLAfterFinished", "Period", "Interval"}

var durationType = reflect.TypeOf(time.Duration(0))

// surfaceProblems returns what is wrong with the exported method set of one
// builder (a pointer type): a method that is neither a setting returning
// the builder nor Objects/Build, a forbidden synonym, a With prefix, a
// duration setting that does not take a time.Duration.
func surfaceProblems(typ reflect.Type, banned map[string]string) []string {
	var out []string
	name := typ.Elem().String()
	for i := range typ.NumMethod() {
		m := typ.Method(i)
		if concept, ok := banned[m.Name]; ok {
			out = append(out, name+"."+m.Name+" is a forbidden synonym ("+concept+")")
		}
		if strings.HasPrefix(m.Name, "With") && len(m.Name) > 4 && m.Name[4] >= 'A' && m.Name[4] <= 'Z' {
			out = append(out, name+"."+m.Name+" has the With prefix")
		}
		if notSettings[m.Name] || derived[name+"."+m.Name] != "" {
			continue
		}
		ft := m.Type // the receiver is In(0)
		if ft.NumOut() != 1 || ft.Out(0) != typ {
			out = append(out, name+"."+m.Name+" is not a setting: it does not return "+typ.String())
		}
		for _, w := range durationWords {
			if strings.HasSuffix(m.Name, w) && (ft.NumIn() < 2 || ft.In(ft.NumIn()-1) != durationType) {
				out = append(out, name+"."+m.Name+" sets a length of time without a time.Duration")
			}
		}
	}
	return out
}

func TestBuilderSurface(t *testing.T) {
	banned := forbidden(t)
	for _, b := range builders {
		typ := reflect.TypeOf(b)
		for _, p := range surfaceProblems(typ, banned) {
			t.Error(p)
		}
	}
}

// TestEveryBuilderIsChecked finds the builders in the source — exported
// types with an Objects method or an embedded pod.Builder or pod.Meta — and
// fails for one the list above leaves out, so a new builder cannot escape
// TestBuilderSurface.
func TestEveryBuilderIsChecked(t *testing.T) {
	listed := map[string]bool{}
	for _, b := range builders {
		e := reflect.TypeOf(b).Elem()
		listed[e.PkgPath()+"."+e.Name()] = true
	}
	for _, f := range sourceFiles(t) {
		for _, decl := range f.file.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil || d.Name.Name != "Objects" || !d.Name.IsExported() {
					continue
				}
				if _, pointer := d.Recv.List[0].Type.(*ast.StarExpr); !pointer {
					continue // a function adapter such as cube.WorkloadFunc, not a builder
				}
				if recv := receiverName(d.Recv.List[0].Type); ast.IsExported(recv) && !listed[f.pkg+"."+recv] {
					t.Errorf("%s.%s has Objects but is not in the builders list of internal/house", f.pkg, recv)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok || !ts.Name.IsExported() {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, fld := range st.Fields.List {
						if len(fld.Names) == 0 && embedsPodSettings(fld.Type) && !listed[f.pkg+"."+ts.Name.Name] {
							t.Errorf("%s.%s embeds the pod settings but is not in the builders list of internal/house", f.pkg, ts.Name.Name)
						}
					}
				}
			}
		}
	}
}

func receiverName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return receiverName(x.X)
	case *ast.IndexExpr:
		return receiverName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}

func embedsPodSettings(e ast.Expr) bool {
	if ix, ok := e.(*ast.IndexExpr); ok {
		e = ix.X
	}
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "pod" && (sel.Sel.Name == "Builder" || sel.Sel.Name == "Meta")
}

type source struct {
	pkg  string
	path string
	file *ast.File
}

// sourceFiles parses every non-test Go file of the module's public
// packages: not internal/, not examples/, not testdata.
func sourceFiles(t *testing.T) []source {
	t.Helper()
	root := moduleRoot(t)
	var out []source
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			base := d.Name()
			if rel != "." && (base == "internal" || base == "examples" || base == "testdata" || strings.HasPrefix(base, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		pkg := module
		if dir != "." {
			pkg += "/" + dir
		}
		out = append(out, source{pkg: pkg, path: rel, file: f})
		return nil
	})
	if err != nil {
		t.Fatalf("walk the module: %v", err)
	}
	return out
}

// identifierProblems returns the exported identifiers of one file that the
// glossary forbids, or that carry the With prefix of a second option style.
func identifierProblems(s source, banned map[string]string) []string {
	var out []string
	check := func(id *ast.Ident, what string) {
		if !id.IsExported() {
			return
		}
		if concept, ok := banned[id.Name]; ok && !(what == "field" && strings.HasPrefix(concept, "a read")) {
			out = append(out, s.path+": "+what+" "+id.Name+" is a forbidden synonym ("+concept+")")
		}
		if what != "field" && strings.HasPrefix(id.Name, "With") && len(id.Name) > 4 && id.Name[4] >= 'A' && id.Name[4] <= 'Z' {
			out = append(out, s.path+": "+what+" "+id.Name+" has the With prefix")
		}
	}
	for _, decl := range s.file.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv != nil && !ast.IsExported(receiverName(d.Recv.List[0].Type)) {
				continue
			}
			check(d.Name, "func")
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch sp := spec.(type) {
				case *ast.TypeSpec:
					check(sp.Name, "type")
					if st, ok := sp.Type.(*ast.StructType); ok && sp.Name.IsExported() {
						for _, fld := range st.Fields.List {
							switch fld.Type.(type) {
							case *ast.ArrayType, *ast.MapType:
								continue // a list of devices is not a count of them
							}
							for _, n := range fld.Names {
								check(n, "field")
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range sp.Names {
						check(n, "value")
					}
				}
			}
		}
	}
	return out
}

func TestVocabulary(t *testing.T) {
	banned := forbidden(t)
	var problems []string
	for _, s := range sourceFiles(t) {
		problems = append(problems, identifierProblems(s, banned)...)
	}
	slices.Sort(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// A builder that drifts, to show the checks fail on what they are for.
type driftingBuilder struct{}

func (d *driftingBuilder) Objects() ([]any, error)                  { return nil, nil }
func (d *driftingBuilder) Image(string) *driftingBuilder            { return d }
func (d *driftingBuilder) GPUs(int) *driftingBuilder                { return d }
func (d *driftingBuilder) WithQueue(string) *driftingBuilder        { return d }
func (d *driftingBuilder) StartupTimeout(string) *driftingBuilder   { return d }
func (d *driftingBuilder) ImageName() string                        { return "" }
func (d *driftingBuilder) KeepAlive(time.Duration) *driftingBuilder { return d }

func TestVocabularyChecksBite(t *testing.T) {
	banned := forbidden(t)
	got := surfaceProblems(reflect.TypeOf(&driftingBuilder{}), banned)
	want := []string{
		"house.driftingBuilder.GPUs is a forbidden synonym (whole accelerators per pod (GPU, NPU, DCU, MLU…))",
		"house.driftingBuilder.ImageName is a forbidden synonym (a read of a value)",
		"house.driftingBuilder.ImageName is not a setting: it does not return *house.driftingBuilder",
		"house.driftingBuilder.StartupTimeout sets a length of time without a time.Duration",
		"house.driftingBuilder.WithQueue has the With prefix",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("surface check on a drifting builder:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	src := `package x
type Usage struct{ Devices int }
func WithNamespace(string) {}
func (u *Usage) RetryLimit(int) {}
var PhaseSucceeded = 1
`
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got = identifierProblems(source{pkg: "x", path: "x.go", file: f}, banned)
	slices.Sort(got)
	want = []string{
		"x.go: field Devices is a forbidden synonym (whole accelerators per pod (GPU, NPU, DCU, MLU…))",
		"x.go: func RetryLimit is a forbidden synonym (how many times a failed thing is tried again)",
		"x.go: func WithNamespace has the With prefix",
		"x.go: value PhaseSucceeded is a forbidden synonym (the end states)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("identifier check on drifting source:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

const module = "github.com/cubestudio/cube"

// rule is what one package of the module may reach: no import path under
// any prefix of deny, and at most budget packages in all (go list -deps,
// standard library included). A budget is the count when the rule was
// written plus a margin; raise it in the change that needs it, saying why.
type rule struct {
	pkg    string
	deny   []string
	budget int
}

var (
	kubernetes        = []string{"k8s.io/", "sigs.k8s.io/"}
	controllerRuntime = []string{"sigs.k8s.io/controller-runtime", "k8s.io/client-go"}
	store             = []string{"go.etcd.io/bbolt"}
	milvus            = []string{"github.com/milvus-io/"}
	argo              = []string{"github.com/argoproj/"}
	trainingOperator  = []string{"github.com/kubeflow/training-operator", "github.com/ray-project/kuberay"}
	volcano           = []string{"volcano.sh/"}
	testOnly          = []string{"github.com/stretchr/testify", module + "/internal/testsupport", module + "/cubetest"}
)

func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// rules are ARCHITECTURE's "a package imports only what it uses", made
// checkable: a knowledge base needs no Kubernetes client, a profile no
// controller-runtime, serving no embedded database, labeling no training
// operator, the local tuner no Argo, the client no Volcano, the pipeline
// graph and its local backend no Argo.
var rules = []rule{
	{"retry", kubernetes, 70},
	{"datasets", kubernetes, 20},
	{"inference", kubernetes, 205},
	{"serve/servetest", kubernetes, 196},
	{"rag", kubernetes, 235},
	{"rag/load", kubernetes, 220},
	{"rag/split", kubernetes, 225},
	{"rag/embed", kubernetes, 210},
	{"rag/store", kubernetes, 115},
	{"models", controllerRuntime, 80},
	{"hardware", controllerRuntime, 290},
	{"vgpu", controllerRuntime, 290},
	{"pod", controllerRuntime, 295},
	{"internal/proc", join(argo, controllerRuntime), 290},
	{"pipeline", argo, 770},
	{"pipeline/local", argo, 770},
	{"serve", join(store, milvus, argo), 800},
	{"llm", join(store, milvus, argo), 810},
	{"label", join(trainingOperator, milvus, argo), 790},
	{"tune", argo, 800},
	{"", volcano, 790},
	// The kubectl plugin is a binary users install: it reads the kinds
	// of every package, but carries no test kit and no knowledge base.
	{"cmd/kubectl-cube", join(testOnly, store, milvus), 870},
}

// deps lists what go list -deps says pkg reaches.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	path := module
	if pkg != "" {
		path += "/" + pkg
	}
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath", path)
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps %s: %v\n%s", path, err, ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v", path, err)
	}
	var list []string
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct{ ImportPath string }
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		list = append(list, p.ImportPath)
	}
	return list
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// violations returns what is wrong with one package's dependencies under r:
// each denied path it reaches, and a count over budget.
func violations(r rule, reached []string) []string {
	var out []string
	denied := 0
	for _, p := range reached {
		for _, d := range r.deny {
			if strings.HasPrefix(p, d) {
				// The first few name the problem; the rest would bury it.
				if denied < 3 {
					out = append(out, "reaches "+p)
				}
				denied++
				break
			}
		}
	}
	if denied > 3 {
		out = append(out, "reaches "+itoa(denied-3)+" more denied packages")
	}
	if len(reached) > r.budget {
		out = append(out, "reaches "+itoa(len(reached))+" packages, over its budget of "+itoa(r.budget))
	}
	return out
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func TestDependencies(t *testing.T) {
	for _, r := range rules {
		name := r.pkg
		if name == "" {
			name = "cube"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			reached := deps(t, r.pkg)
			for _, v := range violations(r, reached) {
				t.Errorf("%s %s", name, v)
			}
			t.Logf("%s reaches %d packages (budget %d)", name, len(reached), r.budget)
		})
	}
}

// TestDependencyRulesBite shows the check fails on what it is meant to
// catch: a forbidden import anywhere in the list, and a count over budget.
func TestDependencyRulesBite(t *testing.T) {
	r := rule{pkg: "rag", deny: kubernetes, budget: 3}
	if v := violations(r, []string{"fmt", "github.com/cubestudio/cube/rag"}); len(v) != 0 {
		t.Errorf("a clean list: %v", v)
	}
	v := violations(r, []string{"fmt", "k8s.io/apimachinery/pkg/util/validation/field", "os", "sigs.k8s.io/yaml"})
	want := []string{"reaches k8s.io/apimachinery/pkg/util/validation/field", "reaches sigs.k8s.io/yaml", "reaches 4 packages, over its budget of 3"}
	if strings.Join(v, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q, want %q", v, want)
	}
}
