package house

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

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
