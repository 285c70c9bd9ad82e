package local

import (
	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/proc"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/internal/graph"

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
	fn      pipeline.StepFunc
	task    *pipeline.Task
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
	out := graph.Substitute(s, func(ref graph.Ref) string {
		switch ref.Kind {
		case graph.RefParam:
			return r.params[ref.Name]
		case graph.RefOutput:
			up := r.nodes[r.g.ByName[ref.Step].Index]
			if up.status == Skipped {
				errs = append(errs, fmt.Errorf("step %s was skipped, so its output %s does not exist", ref.Step, ref.Name))
				return ""
			}
			return up.outputs[ref.Name]
		case graph.RefOutputPath:
			return filepath.Join(r.instanceDir(ns, inst), "outputs", ref.Name)
		case graph.RefItem:
			if inst == nil || inst.index < 0 {
				return ""
			}
			if ref.Name == "" {
				return inst.item
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(ns.items[inst.index], &obj); err != nil {
				errs = append(errs, fmt.Errorf("item %s is not a JSON object, so it has no field %s", inst.item, ref.Name))
				return ""
			}
			v, ok := obj[ref.Name]
			if !ok {
				errs = append(errs, fmt.Errorf("item %s has no field %s", inst.item, ref.Name))
				return ""
			}
			return itemText(v)
		case graph.RefWorkspace:
			return r.workspace
		case graph.RefPipelineName:
			return r.g.P.Name
		case graph.RefPipelineStatus:
			return r.status
		}
		return ""
	})
	return out, errors.Join(errs...)
}

func (r *run) instanceDir(ns *nodeState, inst *instance) string {
	d := filepath.Join(r.dir, "steps", ns.n.C.Name)
	if inst != nil && inst.index >= 0 {
		d = filepath.Join(d, strconv.Itoa(inst.index))
	}
	return d
}

// prepare resolves an instance's strings and computes its cache key.
func (r *run) prepare(ns *nodeState, inst *instance) (*taskSpec, error) {
	n := ns.n
	spec := &taskSpec{ns: ns, inst: inst, dir: r.instanceDir(ns, inst), outputs: n.C.Outputs, inputs: map[string]string{}}
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
	write("v2", n.Type.String(), n.C.Name, inst.item)
	write(n.C.Outputs...)
	if n.Type == graph.Workload {
		for _, o := range n.C.Outputs {
			write(n.Def.JSONPaths[o])
		}
	}
	// A step can read whatever the steps before it left in the workspace,
	// not only the outputs it names, so their keys are part of its own: a
	// step that re-ran with other inputs re-runs every step after it. The
	// exit handler comes after every step.
	upstream := n.Deps
	if n.Exit {
		upstream = r.g.Order
	}
	for _, d := range upstream {
		write(r.nodes[d].key)
	}
	for _, t := range n.Texts {
		write(t.At(n.Path).String(), res(t.Value))
	}
	for _, in := range n.Inputs {
		spec.inputs[graph.InputName(in)] = res("{{" + refString(in) + "}}")
	}
	for _, pn := range n.Params {
		spec.inputs["param_"+pn] = r.params[pn]
	}
	outDir := filepath.Join(spec.dir, "outputs")
	env := []string{pipeline.EnvOutputs + "=" + outDir, pipeline.EnvWorkspace + "=" + r.workspace, "CUBE_INPUTS=" + filepath.Join(spec.dir, "inputs")}
	if fn := r.o.replace[n.C.Name]; fn != nil {
		write("replaced")
		spec.fn = fn
	} else {
		switch s := n.Def.Value.(type) {
		case *pipeline.FuncStep:
			spec.fn, _ = n.Def.Func.(pipeline.StepFunc)
		case *pipeline.ContainerStep:
			cmd, args := podspec.Of(&s.Handle).CommandLine()
			for _, a := range append(cmd, args...) {
				spec.argv = append(spec.argv, res(a))
			}
			spec.env = append(env, envPairs(podspec.Of(&s.Handle).EnvVars(), res)...)
		case *pipeline.WorkloadStep:
			argv, cenv := proc.Command(n.Primary)
			for _, a := range argv {
				spec.argv = append(spec.argv, res(a))
			}
			spec.env = append(env, envPairs(cenv, res)...)
			spec.outputs, spec.fixed = nil, map[string]string{}
			for _, o := range n.C.Outputs {
				v, err := readJSONPath(n.Primary.Object, n.Def.JSONPaths[o])
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
		t := &pipeline.Task{}
		ts := graph.TaskOf(&t.TaskHandle)
		*ts = graph.TaskState{Step: n.C.Name, Item: inst.item, Index: inst.index, Params: r.params, Workspace: r.workspace, Dir: spec.dir, Declared: n.C.Outputs}
		if n.Type == graph.Func && r.o.replace[n.C.Name] == nil {
			ts.Inputs = map[string]string{}
			for _, in := range n.Def.Inputs {
				ts.Inputs[in.Name] = res(in.Value)
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
	for _, p := range append([]string{ns.n.C.Name, string(status), ns.reason}, instanceKeys(ns)...) {
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

func refString(r graph.Ref) string {
	switch r.Kind {
	case graph.RefOutput:
		return "steps." + r.Step + ".outputs." + r.Name
	case graph.RefItem:
		if r.Name == "" {
			return "item"
		}
		return "item." + r.Name
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
