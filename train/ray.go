package train

import (
	"fmt"
	"maps"
	"math"
	"slices"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pod"
)

// RuntimeEnv is the Ray runtime environment of a job's entrypoint; it
// renders to the RayJob's runtimeEnvYAML.
type RuntimeEnv struct {
	// WorkingDir is a local directory or a remote URI (s3://, gs://,
	// https://….zip) uploaded to every worker.
	WorkingDir string `json:"working_dir,omitempty"`
	// Pip packages installed for the job.
	Pip []string `json:"pip,omitempty"`
	// EnvVars are set for the job's processes.
	EnvVars map[string]string `json:"env_vars,omitempty"`
	// PyModules are modules (paths or URIs) importable by the job.
	PyModules []string `json:"py_modules,omitempty"`
}

// rayGroup is one worker group.
type rayGroup struct {
	name               string
	replicas, min, max int
}

// RayJob builds a KubeRay RayJob: a Ray cluster (a head group and worker
// groups sharing the pod settings) that runs an entrypoint and, by
// default, is shut down when the entrypoint finishes. Worker pods get the
// accelerators; the head gets none unless HeadAccelerators says so. The
// containers run `ray start` (KubeRay writes it), so the program goes in
// Entrypoint rather than Command. Create one with Ray.
//
// Its settings are its own methods below, every pod setting (image, env,
// resources, Accelerators, On, Fabric, Queue…: go doc pod.Builder), which
// the head and every worker group take, and the lifecycle settings
// (TTLAfterFinished, ActiveDeadline, Retry, Suspend: go doc
// train.Lifecycle).
type RayJob struct {
	pod.Builder[RayJob]
	Lifecycle[RayJob]
	entrypoint   string
	runtimeEnv   *RuntimeEnv
	groups       []rayGroup
	keepCluster  bool
	rayVersion   string
	headAccelSet bool
	headAccel    int
	gang         bool
	headRes      map[corev1.ResourceName]string
}

// Ray starts a RayJob named name; add at least one WorkerGroup.
func Ray(name string) *RayJob {
	j := &RayJob{}
	podspec.Of(&j.Handle).Init(j, "rayjob", name)
	podspec.Of(&j.Handle).RendersClaims() // Objects appends them
	j.Lifecycle.self = j
	return j
}

// Entrypoint sets the command the job submits to the cluster, e.g.
// "python train.py --epochs 3".
func (j *RayJob) Entrypoint(cmd string) *RayJob {
	if j == nil {
		return nil
	}
	j.entrypoint = cmd
	return j
}

// RuntimeEnv sets the runtime environment of the entrypoint.
func (j *RayJob) RuntimeEnv(env RuntimeEnv) *RayJob {
	if j == nil {
		return nil
	}
	env.Pip = slices.Clone(env.Pip)
	env.PyModules = slices.Clone(env.PyModules)
	env.EnvVars = maps.Clone(env.EnvVars)
	j.runtimeEnv = &env
	return j
}

// WorkerGroup adds a worker group of a fixed size.
func (j *RayJob) WorkerGroup(name string, replicas int) *RayJob {
	if j == nil {
		return nil
	}
	return j.AutoscaledWorkerGroup(name, replicas, replicas, replicas)
}

// AutoscaledWorkerGroup adds a worker group that starts with replicas
// workers and that Ray's autoscaler scales between min and max.
func (j *RayJob) AutoscaledWorkerGroup(name string, replicas, min, max int) *RayJob {
	if j == nil {
		return nil
	}
	j.groups = append(j.groups, rayGroup{name: name, replicas: replicas, min: min, max: max})
	return j
}

// KeepClusterAfterFinish keeps the Ray cluster running when the entrypoint
// finishes (by default it is shut down).
func (j *RayJob) KeepClusterAfterFinish() *RayJob {
	if j == nil {
		return nil
	}
	j.keepCluster = true
	return j
}

// RayVersion records the Ray version of the image (spec.rayClusterSpec.rayVersion).
func (j *RayJob) RayVersion(v string) *RayJob {
	if j == nil {
		return nil
	}
	j.rayVersion = v
	return j
}

// HeadAccelerators gives the head pod n accelerators of the pod settings'
// profile, so that it runs GPU or NPU tasks; 0, the default, gives it none.
// The head shares the workers' placement (profile, slice, fabric), so n is
// either 0 or the workers' count (Accelerators); any other count is
// reported by Objects.
func (j *RayJob) HeadAccelerators(n int) *RayJob {
	if j == nil {
		return nil
	}
	j.headAccelSet, j.headAccel = true, n
	return j
}

// HeadResources gives the head pod its own CPU and memory (requests =
// limits) in place of the shared CPU and Memory; an empty value keeps the
// shared setting. The head runs the GCS, the dashboard and the driver, not
// the training, so it rarely needs what a worker does.
func (j *RayJob) HeadResources(cpu, memory string) *RayJob {
	if j == nil {
		return nil
	}
	j.headRes = cpuMemory(cpu, memory)
	return j
}

// Gang schedules the Ray cluster's pods together through Volcano. KubeRay
// creates the PodGroup (ray-<job>-pg, minMember = head + worker replicas,
// or the minimums when autoscaling) when its operator runs with
// --batch-scheduler=volcano; the job carries the Queue
// (volcano.sh/queue-name) and the PriorityClass (ray.io/priority-class-name)
// of the pod settings, which KubeRay copies to the PodGroup, and the pods
// get schedulerName volcano.
func (j *RayJob) Gang() *RayJob {
	if j == nil {
		return nil
	}
	j.gang = true
	return j
}

// KubeRay's labels for batch scheduling (KubeRay v1.5.0,
// controllers/ray/batchscheduler/volcano and utils/constant.go).
const (
	rayQueueLabel         = "volcano.sh/queue-name"
	rayPriorityClassLabel = "ray.io/priority-class-name"
)

// RayNPUResource is the custom resource Ray schedules Ascend NPUs by (Ray's
// NPUAcceleratorManager). KubeRay maps nvidia.com/gpu limits to --num-gpus
// by itself but knows no Ascend resource, so groups whose pods get NPUs
// declare them in the group's resources.
const RayNPUResource = "NPU"

// maxRayJobName is KubeRay's limit on RayJob names (MaxRayJobNameLength):
// the RayCluster it creates appends a suffix and names pods after it.
const maxRayJobName = 47

func (j *RayJob) build() (*rayv1.RayJob, field.ErrorList) {
	if j == nil || unmade(&j.Builder) {
		return nil, unmadeErrors("train.RayJob", "Ray")
	}
	errs := podspec.Of(&j.Handle).ValidateServiceMeta(maxRayJobName)
	errs = append(errs, podspec.Of(&j.Handle).SettingErrors()...)
	spec := field.NewPath("spec")
	lc, lcErrs := j.Lifecycle.render(lifecyclePaths{
		ttl:      spec.Child("ttlSecondsAfterFinished"),
		deadline: spec.Child("activeDeadlineSeconds"),
		backoff:  spec.Child("backoffLimit"),
		engine:   "KubeRay",
	})
	errs = append(errs, lcErrs...)
	headPath := spec.Child("rayClusterSpec", "headGroupSpec", "template")
	headAccelerators := false
	if j.headAccelSet {
		switch workers := podspec.Of(&j.Handle).GPUCount(); {
		case j.headAccel == 0:
		case j.headAccel == workers:
			headAccelerators = true
		default:
			errs = append(errs, field.Invalid(headPath.Child("spec", "containers").Index(0).Child("resources"), j.headAccel,
				fmt.Sprintf("the head takes the workers' accelerators (%d) or none", workers)))
		}
	}
	if j.entrypoint == "" {
		errs = append(errs, field.Required(spec.Child("entrypoint"), "an entrypoint is required"))
	}
	if command, args := podspec.Of(&j.Handle).CommandLine(); len(command)+len(args) > 0 {
		errs = append(errs, field.Forbidden(field.NewPath("command"), "Ray containers run `ray start`; put the program in Entrypoint"))
	}
	if j.keepCluster {
		if lc.suspend {
			errs = append(errs, field.Forbidden(spec.Child("suspend"), "a RayJob that keeps its cluster cannot be suspended"))
		}
		if lc.ttl != nil && *lc.ttl > 0 {
			errs = append(errs, field.Forbidden(spec.Child("ttlSecondsAfterFinished"), "a RayJob that keeps its cluster has no TTL"))
		}
	}
	if len(j.groups) == 0 {
		errs = append(errs, field.Required(spec.Child("rayClusterSpec", "workerGroupSpecs"), "at least one worker group is required"))
	}

	cluster := &rayv1.RayClusterSpec{RayVersion: j.rayVersion}
	head, headErrs := podspec.Of(&j.Handle).Template(headPath, podspec.TemplateOptions{
		Container:          "ray-head",
		NoGPUs:             !headAccelerators,
		Labels:             map[string]string{LabelComponent: "head"},
		Resources:          j.headRes,
		ScheduledByVolcano: j.gang,
		OmitSettingErrors:  true,
	})
	errs = append(errs, sharedPlacement(headErrs, headPath)...)
	errs = append(errs, checkTemplatePorts(head, headPath)...)
	j.gangTemplate(&head)
	cluster.HeadGroupSpec = rayv1.HeadGroupSpec{
		Template:       head,
		RayStartParams: map[string]string{"dashboard-host": "0.0.0.0"},
		Resources:      j.rayResources(head),
	}
	meta := podspec.Of(&j.Handle).ObjectMeta(podspec.Of(&j.Handle).Name())
	copyJobLabels(&meta, head.Labels)
	names := map[string]bool{}
	for i, g := range j.groups {
		gPath := spec.Child("rayClusterSpec", "workerGroupSpecs").Index(i)
		for _, msg := range validation.IsDNS1123Label(g.name) {
			errs = append(errs, field.Invalid(gPath.Child("groupName"), g.name, msg))
		}
		if names[g.name] {
			errs = append(errs, field.Duplicate(gPath.Child("groupName"), g.name))
		}
		names[g.name] = true
		switch {
		case g.min < 1:
			errs = append(errs, field.Invalid(gPath.Child("minReplicas"), g.min, "must be at least 1"))
		case g.min > g.max:
			errs = append(errs, field.Invalid(gPath.Child("maxReplicas"), g.max, fmt.Sprintf("must not be less than minReplicas (%d)", g.min)))
		case g.replicas < g.min || g.replicas > g.max:
			errs = append(errs, field.Invalid(gPath.Child("replicas"), g.replicas, fmt.Sprintf("must be within %d..%d", g.min, g.max)))
		case g.max > math.MaxInt32:
			errs = append(errs, field.Invalid(gPath.Child("maxReplicas"), g.max, "must fit in 32 bits"))
		}
		tmpl, tmplErrs := podspec.Of(&j.Handle).Template(gPath.Child("template"), podspec.TemplateOptions{
			Container:          "ray-worker",
			Labels:             map[string]string{LabelComponent: "worker"},
			ScheduledByVolcano: j.gang,
			OmitSettingErrors:  true,
		})
		errs = append(errs, sharedPlacement(tmplErrs, gPath.Child("template"))...)
		errs = append(errs, checkTemplatePorts(tmpl, gPath.Child("template"))...)
		copyJobLabels(&meta, tmpl.Labels)
		j.gangTemplate(&tmpl)
		replicas, lo, hi := int32(g.replicas), int32(g.min), int32(g.max)
		cluster.WorkerGroupSpecs = append(cluster.WorkerGroupSpecs, rayv1.WorkerGroupSpec{
			GroupName:      g.name,
			Replicas:       &replicas,
			MinReplicas:    &lo,
			MaxReplicas:    &hi,
			RayStartParams: map[string]string{},
			Template:       tmpl,
			Resources:      j.rayResources(tmpl),
		})
		if g.min != g.max {
			autoscale := true
			cluster.EnableInTreeAutoscaling = &autoscale
		}
	}

	if j.gang {
		if sched := podspec.Of(&j.Handle).SchedulerName(); sched != "" && sched != VolcanoScheduler {
			errs = append(errs, field.Invalid(field.NewPath("schedulerName"), sched,
				"gang scheduling runs through Volcano; remove Scheduler or set it to "+VolcanoScheduler))
		}
		if meta.Labels == nil {
			meta.Labels = map[string]string{}
		}
		if q := podspec.Of(&j.Handle).QueueName(); q != "" {
			meta.Labels[rayQueueLabel] = q
		}
		labelErrs := podspec.ValidateLabels(meta.Labels, field.NewPath("metadata", "labels"))
		if q := podspec.Of(&j.Handle).QueueName(); len(validation.IsDNS1123Subdomain(q)) > 0 {
			// Queue reported the name already.
			labelErrs = slices.DeleteFunc(labelErrs, func(e *field.Error) bool {
				return e.Field == field.NewPath("metadata", "labels").Key(rayQueueLabel).String()
			})
		}
		if pc := podspec.Of(&j.Handle).PriorityClassName(); pc != "" {
			meta.Labels[rayPriorityClassLabel] = pc
		}
		errs = append(errs, labelErrs...)
	}

	job := &rayv1.RayJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: "RayJob"},
		ObjectMeta: meta,
		Spec: rayv1.RayJobSpec{
			Entrypoint:               j.entrypoint,
			RayClusterSpec:           cluster,
			ShutdownAfterJobFinishes: !j.keepCluster,
			Suspend:                  lc.suspend,
			BackoffLimit:             lc.backoff,
		},
	}
	if lc.ttl != nil {
		job.Spec.TTLSecondsAfterFinished = *lc.ttl
	}
	if lc.deadline != nil {
		d := int32(*lc.deadline)
		job.Spec.ActiveDeadlineSeconds = &d
	}
	if j.runtimeEnv != nil {
		envPath := spec.Child("runtimeEnvYAML", "env_vars")
		for _, k := range slices.Sorted(maps.Keys(j.runtimeEnv.EnvVars)) {
			if podspec.SecretLiteral(k, j.runtimeEnv.EnvVars[k]) {
				errs = append(errs, field.Forbidden(envPath.Key(k), k+" looks like a credential written in clear, which would be stored in the RayJob: "+
					"set it on the pods with EnvFromSecret(\""+k+"\", secret, key); Ray's processes inherit it"))
			}
		}
		out, err := yaml.Marshal(j.runtimeEnv)
		if err != nil { // only strings, lists and maps of strings
			errs = append(errs, field.InternalError(spec.Child("runtimeEnvYAML"), err))
		}
		job.Spec.RuntimeEnvYAML = string(out)
	}
	return job, dedupe(errs)
}

// gangTemplate points a gang-scheduled job's pods at Volcano.
func (j *RayJob) gangTemplate(t *corev1.PodTemplateSpec) {
	if j.gang {
		t.Spec.SchedulerName = VolcanoScheduler
	}
}

// rayResources returns a group's Ray resources: the NPUs its pods get on
// Ascend, nil otherwise (KubeRay derives CPUs, memory and GPUs from the
// container itself).
func (j *RayJob) rayResources(t corev1.PodTemplateSpec) map[string]string {
	prof, ok := podspec.Of(&j.Handle).Profile()
	if !ok || prof.Vendor != hardware.Huawei || len(t.Spec.Containers) == 0 {
		return nil
	}
	q, ok := t.Spec.Containers[0].Resources.Limits[prof.ResourceName]
	if !ok || q.IsZero() {
		return nil
	}
	return map[string]string{RayNPUResource: q.String()}
}

// Build validates the settings and returns the RayJob, or every problem at
// once.
func (j *RayJob) Build() (*rayv1.RayJob, error) { return result(j.build()) }

// Objects returns the RayJob; it implements cube.Workload.
func (j *RayJob) Objects() ([]client.Object, error) {
	objs, err := objects(j.Build())
	if err != nil {
		return nil, err
	}
	return appendClaims(objs, &j.Builder), nil
}
