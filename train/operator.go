package train

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pod"
)

// LabelComponent carries the replica role (master, worker, ps, head…) on
// every pod template.
const LabelComponent = "app.kubernetes.io/component"

// operator is what the rendering shared by the training-operator builders
// reads of one: its pod settings (pod.Builder), its run policy and its
// roles' own resources. Each builder embeds the first two by name, so that
// go doc lists them, and hands them over here.
type operator[T any] struct {
	pod   *pod.Builder[T]
	run   *RunPolicy[T]
	roles roleResources
}

// roleResources is the RoleResources setting: a role's own CPU and memory.
type roleResources map[kubeflowv1.ReplicaType]map[corev1.ResourceName]string

// set gives role its own CPU and memory (see TFJob.RoleResources).
func (r *roleResources) set(role kubeflowv1.ReplicaType, cpu, memory string) {
	if *r == nil {
		*r = roleResources{}
	}
	(*r)[role] = cpuMemory(cpu, memory)
}

// cpuMemory is a template's own CPU and memory, leaving out empty values.
func cpuMemory(cpu, memory string) map[corev1.ResourceName]string {
	res := map[corev1.ResourceName]string{}
	if cpu != "" {
		res[corev1.ResourceCPU] = cpu
	}
	if memory != "" {
		res[corev1.ResourceMemory] = memory
	}
	return res
}

// initOperator makes a training-operator builder: its pod settings and its
// run policy return self.
func initOperator[T any](self *T, b *pod.Builder[T], r *RunPolicy[T], kind, name string) {
	podspec.Of(&b.Handle).Init(self, kind, name)
	r.initRunPolicy(self)
}

// role is one replica type of a job.
type role struct {
	typ      kubeflowv1.ReplicaType
	replicas int
	// noGPUs renders the role without accelerators or fabric (a
	// parameter server, an MPI launcher, an MXNet scheduler).
	noGPUs bool
	// override replaces the pod settings' command and args with command
	// and args (nil clears them, leaving the image's entrypoint).
	override      bool
	command, args []string
	// ownServiceAccount replaces the pod settings' ServiceAccount with
	// serviceAccount (empty: the namespace default, or what the operator
	// sets, as for the MPI launcher).
	ownServiceAccount bool
	serviceAccount    string
}

// layout is what a framework asks of the shared core.
type layout struct {
	// specsField names the replica-spec map in the job's spec, e.g.
	// "pytorchReplicaSpecs"; validation paths use it.
	specsField string
	// container is the name the operator requires of the main container.
	container string
	roles     []role
	// gangSize is how many pods must start together (0: all replicas).
	gangSize int
}

// rendered is the framework-independent part of a training-operator job.
type rendered struct {
	meta      metav1.ObjectMeta
	replicas  map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec
	runPolicy kubeflowv1.RunPolicy
}

// render builds the metadata, replica specs and run policy of a job from
// the shared settings, and reports every problem with its field path.
func (o operator[T]) render(l layout) (rendered, field.ErrorList) {
	longest := ""
	total := 0
	var countErrs field.ErrorList
	for _, r := range l.roles {
		suffix := "-" + strings.ToLower(string(r.typ)) + "-" + strconv.Itoa(max(r.replicas-1, 0))
		if len(suffix) > len(longest) {
			longest = suffix
		}
		if r.replicas > math.MaxInt32 {
			countErrs = append(countErrs, field.Invalid(replicasPath(l.specsField, r.typ), r.replicas, "must fit in 32 bits"))
		}
		total += max(r.replicas, 0)
	}
	if len(countErrs) == 0 && total > math.MaxInt32 {
		countErrs = append(countErrs, field.Invalid(field.NewPath("spec", l.specsField), total, "the job's pods must number at most 2147483647"))
	}
	// The operators name Services after the job, leaving room for the
	// longest suffix they append to name pods and services. The pod
	// settings' own problems are reported once, not once per role.
	errs := podspec.Of(&o.pod.Handle).ValidateServiceMeta(validation.DNS1035LabelMaxLength - len(longest))
	errs = append(errs, podspec.Of(&o.pod.Handle).SettingErrors()...)
	errs = append(errs, countErrs...)
	gangSize := l.gangSize
	if gangSize == 0 {
		gangSize = total
	}
	rp, gang, rpErrs := o.run.render(podspec.Of(&o.pod.Handle).QueueName(), podspec.Of(&o.pod.Handle).PriorityClassName(), podspec.Of(&o.pod.Handle).SchedulerName(), clamp32(gangSize), clamp32(total))
	errs = append(errs, rpErrs...)

	specsPath := field.NewPath("spec", l.specsField)
	if o.run.restart != nil && !slices.Contains(restartPolicies, *o.run.restart) && len(l.roles) > 0 {
		errs = append(errs, field.NotSupported(specsPath.Key(string(l.roles[0].typ)).Child("restartPolicy"), *o.run.restart, restartPolicies))
	}
	out := rendered{
		meta:      podspec.Of(&o.pod.Handle).ObjectMeta(podspec.Of(&o.pod.Handle).Name()),
		replicas:  make(map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec, len(l.roles)),
		runPolicy: rp,
	}
	roles := make([]kubeflowv1.ReplicaType, len(l.roles))
	for i, r := range l.roles {
		roles[i] = r.typ
	}
	for _, typ := range slices.Sorted(maps.Keys(o.roles)) {
		if !slices.Contains(roles, typ) {
			errs = append(errs, field.NotSupported(specsPath.Key(string(typ)), typ, roles))
		}
	}
	for _, r := range l.roles {
		rolePath := specsPath.Key(string(r.typ))
		tmpl, tmplErrs := podspec.Of(&o.pod.Handle).Template(rolePath.Child("template"), podspec.TemplateOptions{
			Container:          l.container,
			NoGPUs:             r.noGPUs,
			Labels:             map[string]string{LabelComponent: strings.ToLower(string(r.typ))},
			Resources:          o.roles[r.typ],
			ScheduledByVolcano: gang.on,
			OmitSettingErrors:  true,
		})
		errs = append(errs, sharedPlacement(tmplErrs, rolePath.Child("template"))...)
		if r.override {
			c := &tmpl.Spec.Containers[0]
			c.Command, c.Args = slices.Clone(r.command), slices.Clone(r.args)
		}
		if r.ownServiceAccount {
			tmpl.Spec.ServiceAccountName = r.serviceAccount
		}
		if gang.on {
			tmpl.Spec.SchedulerName = VolcanoScheduler
		}
		copyJobLabels(&out.meta, tmpl.Labels)
		n := clamp32(r.replicas)
		spec := &kubeflowv1.ReplicaSpec{Replicas: &n, Template: tmpl}
		if o.run.restart != nil {
			spec.RestartPolicy = *o.run.restart
		}
		out.replicas[r.typ] = spec
	}
	return out, dedupe(errs)
}

// sharedPlacement moves the problems of a template that are not about one
// of its fields (the hardware placement's count, fabric, profile, shared
// memory: paths below the template other than metadata and spec) out from
// under the template, so that a placement every replica shares is
// reported once (dedupe drops the repeats), not once per role.
func sharedPlacement(errs field.ErrorList, tmplPath *field.Path) field.ErrorList {
	prefix := tmplPath.String() + "."
	out := make(field.ErrorList, 0, len(errs))
	for _, e := range errs {
		if rest, ok := strings.CutPrefix(e.Field, prefix); ok && !strings.HasPrefix(rest, "spec.") && !strings.HasPrefix(rest, "metadata.") {
			moved := *e
			moved.Field = rest
			e = &moved
		}
		out = append(out, e)
	}
	return out
}

// count32 reports a negative count or one beyond int32 under path.
func count32(n int, path *field.Path) field.ErrorList {
	if n < 0 {
		return field.ErrorList{field.Invalid(path, n, "must not be negative")}
	}
	if _, err := podspec.Int32(path, n); err != nil {
		return field.ErrorList{err}
	}
	return nil
}

// clamp32 converts a count already checked against the int32 range (or
// reported) to int32.
func clamp32(n int) int32 { return int32(min(max(n, 0), math.MaxInt32)) }

// checkPorts reports container ports that share a number and protocol
// once the operator's defaulting (SetObjectDefaults_*, which adds its
// own named port) has run: server-side apply keys the list by them.
func checkPorts(specsField string, specs map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec) field.ErrorList {
	var errs field.ErrorList
	for _, typ := range slices.Sorted(maps.Keys(specs)) {
		errs = append(errs, checkTemplatePorts(specs[typ].Template, field.NewPath("spec", specsField).Key(string(typ)).Child("template"))...)
	}
	return errs
}

// checkTemplatePorts reports the ports of a template's containers that
// share a number and protocol.
func checkTemplatePorts(tmpl corev1.PodTemplateSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for ci, c := range tmpl.Spec.Containers {
		seen := map[string]bool{}
		for pi, p := range c.Ports {
			key := strconv.Itoa(int(p.ContainerPort)) + "/" + string(cmp.Or(p.Protocol, corev1.ProtocolTCP))
			if seen[key] {
				errs = append(errs, field.Duplicate(path.Child("spec", "containers").Index(ci).Child("ports").Index(pi).Child("containerPort"), p.ContainerPort))
			}
			seen[key] = true
		}
	}
	return errs
}

// jobLabels are pod-template labels that the job object must carry too:
// Ascend's ring-controller.atlas, which hardware.Apply sets on the pods and
// the Ascend scheduler plugins read from the job.
var jobLabels = []string{hardware.LabelRingController}

func copyJobLabels(meta *metav1.ObjectMeta, podLabels map[string]string) {
	for _, k := range jobLabels {
		if v, ok := podLabels[k]; ok {
			if meta.Labels == nil {
				meta.Labels = map[string]string{}
			}
			meta.Labels[k] = v
		}
	}
}

// dedupe drops repeated errors: settings shared by every replica (a
// negative GPU count, a bad /dev/shm size) are reported once. A problem of
// a pod template that recurs in the templates of other roles (a job's
// port, environment variable or image, which every role shares) is
// reported once too, under the first role's path, naming the others.
func dedupe(errs field.ErrorList) field.ErrorList {
	seen := map[string]bool{}
	first := map[string]int{}    // template problem (without the role) -> index in out
	others := map[int][]string{} // index in out -> the other roles' template paths
	out := errs[:0:0]
	for _, e := range errs {
		k := e.Error()
		if seen[k] {
			continue
		}
		seen[k] = true
		if role, rest, ok := strings.Cut(e.Field, ".template."); ok {
			// The role's path is part of the error's text only through
			// Field: the rest of the key is type, value and detail.
			key := rest + "\x00" + strings.Replace(k, e.Field, "", 1)
			if i, dup := first[key]; dup {
				others[i] = append(others[i], role)
				continue
			}
			first[key] = len(out)
		}
		out = append(out, e)
	}
	for i, roles := range others {
		merged := *out[i]
		if same := "the same in " + strings.Join(roles, ", "); merged.Detail == "" {
			merged.Detail = same
		} else {
			merged.Detail += " (" + same + ")"
		}
		out[i] = &merged
	}
	return out
}

// replicasPath is where a role's replica count lives.
func replicasPath(specsField string, typ kubeflowv1.ReplicaType) *field.Path {
	return field.NewPath("spec", specsField).Key(string(typ)).Child("replicas")
}

// atLeast reports a replica count below least under path.
func atLeast(n, least int, path *field.Path, what string) field.ErrorList {
	if n < least {
		return field.ErrorList{field.Invalid(path, n, "at least "+strconv.Itoa(least)+" "+what+" required")}
	}
	return nil
}

// perPod is a count per pod (processes, MPI slots): set explicitly, or one
// per accelerator, or 1 for pods without accelerators.
func perPod(set *int, devices int) int {
	switch {
	case set != nil:
		return *set
	case devices > 0:
		return devices
	}
	return 1
}

// operatorError turns an error of the training-operator's own validation
// into a field error on spec.
func operatorError(err error) *field.Error {
	return field.Invalid(field.NewPath("spec"), "", "rejected by the training-operator's validation: "+err.Error())
}

// unmade reports a builder that no constructor made: a nil pointer or a
// zero value, whose chained methods return nil.
func unmade[T any](b *pod.Builder[T]) bool { return podspec.Of(&b.Handle).Identity().Kind == "" }

// unmadeErrors is the problem reported for a builder no constructor made.
func unmadeErrors(typ, constructor string) field.ErrorList {
	return field.ErrorList{field.Required(field.NewPath("metadata", "name"),
		"a nil or zero "+typ+" has no name and no settings: start it with train."+constructor+"(name)")}
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: kubeflowv1.SchemeGroupVersion.String(), Kind: kind}
}

// objects wraps the primary object of a builder for Objects.
func objects[J client.Object](obj J, err error) ([]client.Object, error) {
	if err != nil {
		return nil, err
	}
	return []client.Object{obj}, nil
}

// appendClaims appends the object the pods' DRA claim comes from, if any
// (podspec.Builder.Claims).
func appendClaims[T any](objs []client.Object, b *pod.Builder[T]) []client.Object {
	tmpl, claim := podspec.Of(&b.Handle).Claims()
	if tmpl != nil {
		objs = append(objs, tmpl)
	}
	if claim != nil {
		objs = append(objs, claim)
	}
	return objs
}

// noClaims refuses a DRA flavour on a job of the training-operator: its
// v1.8.1 CRDs (manifests/base/crds/kubeflow.org_pytorchjobs.yaml and the
// others) describe a pod's resourceClaims in the shape before Kubernetes
// 1.28 (resourceClaims[].source.resourceClaimTemplateName), so the API
// server refuses the resource.k8s.io/v1 shape
// (resourceClaims[].resourceClaimTemplateName) as a field not declared in
// the schema, and the operator's pod types would drop it.
func noClaims[T any](b *pod.Builder[T]) error {
	p, ok := podspec.Of(&b.Handle).Profile()
	if !ok || !p.DRA() {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec", "profile", "flavour"), p.Flavour,
		"the training-operator (v1.8.1) cannot carry DRA claims in its pod templates: its CRDs predate resource.k8s.io/v1; use a device plugin flavour, or a RayJob")}.ToAggregate()
}

// result returns obj, or nil and every problem at once.
func result[J any](obj J, errs field.ErrorList) (J, error) {
	if err := errs.ToAggregate(); err != nil {
		var zero J
		return zero, err
	}
	return obj, nil
}
