package tune

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"

	katibv1beta1 "github.com/kubeflow/katib/pkg/apis/controller/experiments/v1beta1"
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/podspec"
)

// Ref returns the placeholder Katib replaces with the value of param in each
// trial, "${trialParameters.<param>}", for a workload's argument, env value
// or any other string field. The local tuner replaces it the same way.
func Ref(param string) string { return "${trialParameters." + param + "}" }

// placeholder matches Katib's trial parameter placeholders
// (consts.TrialTemplateParamReplaceFormatRegex in Katib v0.19.0).
var placeholder = regexp.MustCompile(`\$\{trialParameters\.([^}]+)\}`)

// Placement puts a parameter into the trial workload. Arg and Env build
// them; Ref places a parameter by hand anywhere in the workload.
type Placement struct {
	param string
	flag  string // Arg: appended to the primary container's args
	env   string // Env: set on every container
}

// Arg appends flag and the parameter's placeholder to the args of the
// primary container of every pod of the trial ("--lr", "${trialParameters.lr}").
// A container whose args are one shell script takes Ref inside the script
// instead.
func Arg(param, flag string) Placement { return Placement{param: param, flag: flag} }

// Env sets the environment variable name to the parameter's value on every
// container of every pod of the trial.
func Env(param, name string) Placement { return Placement{param: param, env: name} }

// kindDefaults is what Katib needs to follow one trial kind: the
// container whose output carries the metrics, the labels of the pods that
// run it, and when the trial object has succeeded or failed (gjson paths).
type kindDefaults struct {
	container        string
	primaryLabels    map[string]string
	success, failure string
}

// jobRoleMaster is the label the training-operator (v1.8.1) gives the pod
// of the replica IsMasterRole picks: the PyTorch Master (or Worker 0 without
// one), the TF Chief/Master (or Worker 0), the XGBoost Master and the MPI
// Launcher. It is also Katib's DefaultKubeflowJobPrimaryPodLabels.
var jobRoleMaster = katibv1beta1.DefaultKubeflowJobPrimaryPodLabels

// trialKinds are the kinds whose defaults cube knows: Katib's default
// trialResources at v0.19.0 (katib-config.yaml) but TrainJob, which cube
// does not build. Other kinds need PrimaryContainer and Conditions, and the
// Katib controller must list them in its trialResources.
var trialKinds = map[schema.GroupKind]kindDefaults{
	{Group: "batch", Kind: "Job"}: {
		success: katibv1beta1.DefaultJobSuccessCondition,
		failure: katibv1beta1.DefaultJobFailureCondition,
	},
	{Group: kubeflowv1.GroupVersion.Group, Kind: kubeflowv1.PyTorchJobKind}: {
		container: kubeflowv1.PyTorchJobDefaultContainerName, primaryLabels: jobRoleMaster,
		success: katibv1beta1.DefaultKubeflowJobSuccessCondition, failure: katibv1beta1.DefaultKubeflowJobFailureCondition,
	},
	{Group: kubeflowv1.GroupVersion.Group, Kind: kubeflowv1.TFJobKind}: {
		container: kubeflowv1.TFJobDefaultContainerName, primaryLabels: jobRoleMaster,
		success: katibv1beta1.DefaultKubeflowJobSuccessCondition, failure: katibv1beta1.DefaultKubeflowJobFailureCondition,
	},
	{Group: kubeflowv1.GroupVersion.Group, Kind: kubeflowv1.MPIJobKind}: {
		container: kubeflowv1.MPIJobDefaultContainerName, primaryLabels: jobRoleMaster,
		success: katibv1beta1.DefaultKubeflowJobSuccessCondition, failure: katibv1beta1.DefaultKubeflowJobFailureCondition,
	},
	{Group: kubeflowv1.GroupVersion.Group, Kind: kubeflowv1.XGBoostJobKind}: {
		container: kubeflowv1.XGBoostJobDefaultContainerName, primaryLabels: jobRoleMaster,
		success: katibv1beta1.DefaultKubeflowJobSuccessCondition, failure: katibv1beta1.DefaultKubeflowJobFailureCondition,
	},
}

// renderedTrial is the trial workload turned into Katib's trial template.
type renderedTrial struct {
	spec      *unstructured.Unstructured
	shared    []client.Object // ConfigMaps and Secrets every trial mounts
	container string
	labels    map[string]string
	success   string
	failure   string
	refs      []string // the parameters the template references, in order
}

// renderTrial renders w and places the parameters.
func (e *Experiment) renderTrial(path *field.Path) (*renderedTrial, field.ErrorList) {
	if e.trial == nil {
		return nil, field.ErrorList{field.Required(path, "set the trial workload with Trial")}
	}
	objs, err := e.trial.Objects()
	if err != nil {
		return nil, field.ErrorList{field.Invalid(path, "", fmt.Sprintf("the trial workload is invalid: %v", err))}
	}
	var errs field.ErrorList
	out := &renderedTrial{}
	var main client.Object
	for i, o := range objs {
		if o == nil {
			errs = append(errs, field.Invalid(path.Index(i), nil, "the trial workload rendered a nil object"))
			continue
		}
		if ns := o.GetNamespace(); ns != "" && ns != podspec.Of(&e.Handle).NamespaceName() {
			errs = append(errs, field.Invalid(path.Index(i).Child("metadata", "namespace"), ns,
				fmt.Sprintf("Katib runs trials in the experiment's namespace %q", podspec.Of(&e.Handle).NamespaceName())))
		}
		switch kind := o.GetObjectKind().GroupVersionKind().Kind; kind {
		case "ConfigMap", "Secret":
			out.shared = append(out.shared, o)
		default:
			if main != nil {
				errs = append(errs, field.Invalid(path.Index(i), kind+" "+o.GetName(),
					fmt.Sprintf("the trial workload renders %s %s besides %s %s; Katib creates one object per trial",
						kind, o.GetName(), main.GetObjectKind().GroupVersionKind().Kind, main.GetName())))
				continue
			}
			main = o
		}
	}
	if main == nil {
		return nil, append(errs, field.Required(path, "the trial workload renders no trial object (a Job, PyTorchJob...)"))
	}
	u, err := cube.ToUnstructured(main)
	if err != nil {
		return nil, append(errs, field.Invalid(path, main.GetName(), err.Error()))
	}
	gvk := u.GroupVersionKind()
	defaults := trialKinds[gvk.GroupKind()]
	known := defaults.success != ""

	out.container = defaults.container
	if e.primaryContainer != "" {
		out.container = e.primaryContainer
	}
	out.labels = maps.Clone(defaults.primaryLabels)
	if e.primaryLabels != nil {
		out.labels = maps.Clone(e.primaryLabels)
	}
	out.success, out.failure = defaults.success, defaults.failure
	if e.success != "" || e.failure != "" {
		out.success, out.failure = e.success, e.failure
	}

	pods := podSpecs(u.Object)
	if out.container == "" {
		// A batch Job with one container names its primary container.
		if names := containerNames(pods); len(names) == 1 {
			out.container = names[0]
		} else {
			errs = append(errs, field.Required(field.NewPath("spec", "trialTemplate", "primaryContainerName"),
				fmt.Sprintf("%s has containers %q: name the one that reports metrics with PrimaryContainer", gvk.Kind, names)))
		}
	} else if !slices.Contains(containerNames(pods), out.container) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "trialTemplate", "primaryContainerName"), out.container,
			fmt.Sprintf("%s has no container of that name (it has %q)", gvk.Kind, containerNames(pods))))
	}
	if !known && (out.success == "" || out.failure == "") {
		errs = append(errs, field.Required(field.NewPath("spec", "trialTemplate", "successCondition"),
			fmt.Sprintf("cube knows no completion of %s: set Conditions (and PrimaryPodLabels), and list %s in the Katib controller's trialResources", gvk.Kind, gvk.Kind)))
	} else if out.success == "" || out.failure == "" {
		errs = append(errs, field.Required(field.NewPath("spec", "trialTemplate", "failureCondition"), "Conditions needs both a success and a failure condition"))
	}

	// Katib names the trial object after the trial and creates it in the
	// experiment's namespace: the validator refuses a name or namespace.
	unstructured.RemoveNestedField(u.Object, "metadata", "name")
	unstructured.RemoveNestedField(u.Object, "metadata", "namespace")
	relabel(u.Object, podspec.Of(&e.Handle).Name())

	for i, pl := range e.placements {
		pp := field.NewPath("trial", "placements").Index(i)
		if !slices.ContainsFunc(e.params, func(p Param) bool { return p.name == pl.param }) {
			errs = append(errs, field.Invalid(pp.Child("param"), pl.param, "is not a parameter of the experiment"))
			continue
		}
		switch {
		case pl.flag != "":
			placed := false
			for _, ps := range pods {
				for _, c := range containersOf(ps) {
					if c["name"] != out.container {
						continue
					}
					args, _ := c["args"].([]any)
					c["args"] = append(args, pl.flag, Ref(pl.param))
					placed = true
				}
			}
			if !placed {
				errs = append(errs, field.Invalid(pp.Child("flag"), pl.flag, fmt.Sprintf("no primary container %q to take the argument", out.container)))
			}
		case pl.env != "":
			if !envName.MatchString(pl.env) {
				errs = append(errs, field.Invalid(pp.Child("env"), pl.env, "must be a C identifier"))
				continue
			}
			for _, ps := range pods {
				for _, c := range containersOf(ps) {
					env, _ := c["env"].([]any)
					env = slices.DeleteFunc(env, func(v any) bool {
						m, _ := v.(map[string]any)
						return m["name"] == pl.env
					})
					c["env"] = append(env, map[string]any{"name": pl.env, "value": Ref(pl.param)})
				}
			}
		default:
			errs = append(errs, field.Required(pp, "build placements with Arg or Env"))
		}
	}

	text, err := json.Marshal(u.Object)
	if err != nil {
		return nil, append(errs, field.Invalid(path, main.GetName(), err.Error()))
	}
	seen := map[string]bool{}
	for _, m := range placeholder.FindAllStringSubmatch(string(text), -1) {
		name := m[1]
		if seen[name] {
			continue
		}
		seen[name] = true
		if !slices.ContainsFunc(e.params, func(p Param) bool { return p.name == name }) {
			errs = append(errs, field.Invalid(path, m[0], fmt.Sprintf("the trial references %q, which is not a parameter", name)))
			continue
		}
		out.refs = append(out.refs, name)
	}
	for i, p := range e.params {
		if p.name != "" && !seen[p.name] {
			errs = append(errs, field.Invalid(field.NewPath("spec", "parameters").Index(i).Child("name"), p.name,
				"reaches no trial: place it with tune.Arg, tune.Env or tune.Ref"))
		}
	}
	for _, o := range out.shared {
		b, err := json.Marshal(o)
		if err == nil && placeholder.Match(b) {
			errs = append(errs, field.Invalid(path, o.GetObjectKind().GroupVersionKind().Kind+" "+o.GetName(),
				"Katib substitutes parameters only in the trial object, not in the ConfigMaps or Secrets beside it: pass the parameter with Arg or Env"))
		}
	}
	out.spec = u
	return out, errs
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// podSpecs returns every pod spec in a rendered object: a map holding a
// "containers" list, wherever the kind nests its pod templates.
func podSpecs(v any) []map[string]any {
	var out []map[string]any
	switch t := v.(type) {
	case map[string]any:
		if _, ok := t["containers"].([]any); ok {
			out = append(out, t)
		}
		for _, k := range slices.Sorted(maps.Keys(t)) {
			out = append(out, podSpecs(t[k])...)
		}
	case []any:
		for _, x := range t {
			out = append(out, podSpecs(x)...)
		}
	}
	return out
}

func containersOf(podSpec map[string]any) []map[string]any {
	list, _ := podSpec["containers"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, c := range list {
		if m, ok := c.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func containerNames(pods []map[string]any) []string {
	var names []string
	for _, ps := range pods {
		for _, c := range containersOf(ps) {
			if n, ok := c["name"].(string); ok && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

// relabel moves every cube release label in the trial (its own and its pod
// templates') to the experiment's release, so that the trial objects and
// their pods belong to the experiment's release: cube's Logs and Delete of
// the experiment reach them.
func relabel(v any, release string) {
	switch t := v.(type) {
	case map[string]any:
		if md, ok := t["metadata"].(map[string]any); ok {
			if labels, ok := md["labels"].(map[string]any); ok {
				if _, ok := labels[cube.LabelRelease]; ok {
					labels[cube.LabelRelease] = release
				}
			}
		}
		if sel, ok := t["matchLabels"].(map[string]any); ok {
			if _, ok := sel[cube.LabelRelease]; ok {
				sel[cube.LabelRelease] = release
			}
		}
		for _, x := range t {
			relabel(x, release)
		}
	case []any:
		for _, x := range t {
			relabel(x, release)
		}
	}
}
