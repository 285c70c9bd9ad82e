package pipeline

import (
	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pipeline/local"

	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/jsonpath"
)

// taskSpec is one instance made ready to execute.
type taskSpec struct {
	ns      *nodeState
	inst    *instance
	dir     string
	argv    []string
	env     []string
	fn      StepFunc
	task    *Task
	key     string
	inputs  map[string]string // file name → value, written to inputs/
	outputs []string          // read from the outputs directory
	// fixed are outputs known before the step runs: a workload step's,
	// read from its job with OutputFrom's JSONPath.
	fixed map[string]string
}

// resolve replaces the placeholders of s with this run's values.
func (r *run) resolve(ns *nodeState, inst *instance, s string) (string, error) {
	var errs []error
	out := substitute(s, func(ref ref) string {
		switch ref.kind {
		case refParam:
			return r.params[ref.name]
		case refOutput:
			up := r.nodes[r.g.byName[ref.step].index]
			if up.status == Skipped {
				errs = append(errs, fmt.Errorf("step %s was skipped, so its output %s does not exist", ref.step, ref.name))
				return ""
			}
			return up.outputs[ref.name]
		case refOutputPath:
			return filepath.Join(r.instanceDir(ns, inst), "outputs", ref.name)
		case refItem:
			if inst == nil || inst.index < 0 {
				return ""
			}
			if ref.name == "" {
				return inst.item
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(ns.items[inst.index], &obj); err != nil {
				errs = append(errs, fmt.Errorf("item %s is not a JSON object, so it has no field %s", inst.item, ref.name))
				return ""
			}
			v, ok := obj[ref.name]
			if !ok {
				errs = append(errs, fmt.Errorf("item %s has no field %s", inst.item, ref.name))
				return ""
			}
			return itemText(v)
		case refWorkspace:
			return r.workspace
		case refPipelineName:
			return podspec.Of(&r.g.p.Handle).Name()
		case refPipelineStatus:
			return r.status
		}
		return ""
	})
	return out, errors.Join(errs...)
}

func (r *run) instanceDir(ns *nodeState, inst *instance) string {
	d := filepath.Join(r.dir, "steps", ns.n.c.name)
	if inst != nil && inst.index >= 0 {
		d = filepath.Join(d, strconv.Itoa(inst.index))
	}
	return d
}

// prepare resolves an instance's strings and computes its cache key.
func (r *run) prepare(ns *nodeState, inst *instance) (*taskSpec, error) {
	n := ns.n
	spec := &taskSpec{ns: ns, inst: inst, dir: r.instanceDir(ns, inst), outputs: n.c.outputs, inputs: map[string]string{}}
	var errs []error
	res := func(s string) string {
		v, err := r.resolve(ns, inst, s)
		if err != nil {
			errs = append(errs, err)
		}
		return v
	}
	h := sha256.New()
	write := func(parts ...string) {
		for _, p := range parts {
			h.Write([]byte(strconv.Itoa(len(p))))
			h.Write([]byte{':'})
			h.Write([]byte(p))
		}
	}
	write("v2", n.typ.String(), n.c.name, inst.item)
	write(n.c.outputs...)
	if ws, ok := n.step.(*WorkloadStep); ok {
		for _, o := range n.c.outputs {
			write(ws.jsonPaths[o])
		}
	}
	// A step can read whatever the steps before it left in the workspace,
	// not only the outputs it names, so their keys are part of its own: a
	// step that re-ran with other inputs re-runs every step after it. The
	// exit handler comes after every step.
	upstream := n.deps
	if n.exit {
		upstream = r.g.order
	}
	for _, d := range upstream {
		write(r.nodes[d].key)
	}
	for _, t := range n.texts() {
		write(t.path(n.path).String(), res(t.value))
	}
	for _, in := range n.inputs {
		spec.inputs[inputName(in)] = res("{{" + refString(in) + "}}")
	}
	for _, pn := range n.params {
		spec.inputs["param_"+pn] = r.params[pn]
	}
	outDir := filepath.Join(spec.dir, "outputs")
	env := []string{EnvOutputs + "=" + outDir, EnvWorkspace + "=" + r.workspace, "CUBE_INPUTS=" + filepath.Join(spec.dir, "inputs")}
	if fn := r.o.replace[n.c.name]; fn != nil {
		write("replaced")
		spec.fn = fn
	} else {
		switch s := n.step.(type) {
		case *FuncStep:
			spec.fn = s.fn
		case *ContainerStep:
			cmd, args := podspec.Of(&s.Handle).CommandLine()
			for _, a := range append(cmd, args...) {
				spec.argv = append(spec.argv, res(a))
			}
			spec.env = append(env, envPairs(podspec.Of(&s.Handle).EnvVars(), res)...)
		case *WorkloadStep:
			argv, cenv := local.Command(n.primary)
			for _, a := range argv {
				spec.argv = append(spec.argv, res(a))
			}
			spec.env = append(env, envPairs(cenv, res)...)
			spec.outputs, spec.fixed = nil, map[string]string{}
			for _, o := range n.c.outputs {
				v, err := readJSONPath(n.primary.Object, s.jsonPaths[o])
				if err != nil {
					errs = append(errs, fmt.Errorf("output %s: %w", o, err))
				}
				spec.fixed[o] = res(v)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if spec.fn != nil {
		t := &Task{step: n.c.name, item: inst.item, index: inst.index, params: r.params, workspace: r.workspace, dir: spec.dir, declared: n.c.outputs}
		if fs, ok := n.step.(*FuncStep); ok && r.o.replace[n.c.name] == nil {
			t.inputs = map[string]string{}
			for _, in := range fs.inputs {
				t.inputs[in.name] = res(in.value)
			}
		}
		spec.task = t
	}
	spec.key = hex.EncodeToString(h.Sum(nil))
	inst.key = spec.key
	return spec, nil
}

// nodeKey hashes a finished step's status, reason and its instances' cache
// keys in item order. A step served from the cache counts as the run that
// filled the cache, so that the steps after it stay cached too.
func nodeKey(ns *nodeState) string {
	status := ns.status
	if status == Cached {
		status = cube.Succeeded
	}
	h := sha256.New()
	for _, p := range append([]string{ns.n.c.name, string(status), ns.reason}, instanceKeys(ns)...) {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func instanceKeys(ns *nodeState) []string {
	keys := make([]string, len(ns.insts))
	for i, in := range ns.insts {
		keys[i] = in.key
	}
	return keys
}

// readJSONPath evaluates a kubectl JSONPath template on a JSON-like
// object, as Argo's executor does on the job it created; a path to a field
// the object lacks reads as empty, as kubectl prints it.
func readJSONPath(obj map[string]any, path string) (string, error) {
	jp := jsonpath.New("output").AllowMissingKeys(true)
	if err := jp.Parse(path); err != nil {
		return "", err
	}
	var b strings.Builder
	if err := jp.Execute(&b, obj); err != nil {
		return "", err
	}
	return b.String(), nil
}

func refString(r ref) string {
	switch r.kind {
	case refOutput:
		return "steps." + r.step + ".outputs." + r.name
	case refItem:
		if r.name == "" {
			return "item"
		}
		return "item." + r.name
	}
	return ""
}

// envPairs turns a step's plain env values into KEY=VALUE pairs; values
// taken from Secrets, ConfigMaps or pod fields do not exist locally.
func envPairs(env []corev1.EnvVar, res func(string) string) []string {
	out := make([]string, 0, len(env))
	for _, e := range env {
		if e.ValueFrom == nil {
			out = append(out, e.Name+"="+res(e.Value))
		}
	}
	return out
}
