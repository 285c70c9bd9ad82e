package train

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcbus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/cubestudio/cube/pod"
)

// Volcano job plugins (spec.plugins) cube knows.
const (
	// PluginEnv sets VC_TASK_INDEX (and VK_TASK_INDEX) in every pod.
	PluginEnv = "env"
	// PluginSvc creates a headless Service and writes the hosts of every
	// task to /etc/volcano (VC_<TASK>_HOSTS, VC_<TASK>_NUM).
	PluginSvc = "svc"
	// PluginSSH generates an ssh key pair shared by the pods, for
	// launchers that reach the other pods over ssh (mpirun, horovodrun,
	// deepspeed, colossalai run).
	PluginSSH = "ssh"
)

var volcanoPlugins = []string{PluginEnv, PluginSvc, PluginSSH, "pytorch", "tensorflow", "mpi", "ray"}

// DefaultVolcanoQueue is the queue Volcano jobs go to unless Queue says
// otherwise.
const DefaultVolcanoQueue = "default"

// VolcanoTask is one task (a group of identical pods) of a Volcano job.
// The pods take the job's pod settings; Command and Args, when set,
// replace the settings' command line for this task.
type VolcanoTask struct {
	Name     string
	Replicas int
	// MinAvailable is how many pods of the task must be schedulable
	// together (default: all).
	MinAvailable *int
	// Command and Args replace the job's command line when Command is set.
	Command, Args []string
	// NoAccelerators runs the task without accelerators (a launcher).
	NoAccelerators bool
	// CPU and Memory, when set, replace the job's CPU and memory (requests
	// = limits) for this task's pods: a small launcher or a parameter
	// server with more memory.
	CPU, Memory string
	// Policies are the task's own lifecycle policies.
	Policies []vcbatch.LifecyclePolicy
	// MaxRetry is how often the task is retried (0: the job's).
	MaxRetry int
}

// VolcanoJob builds a Volcano batch.volcano.sh/v1alpha1 Job: tasks of pods
// gang-scheduled together (minAvailable), the env, svc and ssh plugins that
// let the pods find each other, a queue, lifecycle policies (restart the
// job when a pod is evicted…) and a retry limit. Create one with Volcano.
type VolcanoJob struct {
	pod.Builder[VolcanoJob]
	tasks        []VolcanoTask
	minAvailable *int
	plugins      map[string][]string
	policies     []vcbatch.LifecyclePolicy
	maxRetry     *int
	ttl          *time.Duration
}

// Volcano starts a Volcano job named name with the env and svc plugins;
// add at least one task.
func Volcano(name string) *VolcanoJob {
	j := &VolcanoJob{plugins: map[string][]string{PluginEnv: {}, PluginSvc: {}}}
	j.Init(j, "volcanojob", name)
	return j
}

// Task adds a task of replicas pods running the job's command line.
func (j *VolcanoJob) Task(name string, replicas int) *VolcanoJob {
	return j.AddTask(VolcanoTask{Name: name, Replicas: replicas})
}

// AddTask adds a task described in full.
func (j *VolcanoJob) AddTask(t VolcanoTask) *VolcanoJob {
	t.Command, t.Args = slices.Clone(t.Command), slices.Clone(t.Args)
	t.Policies = slices.Clone(t.Policies)
	if t.MinAvailable != nil {
		n := *t.MinAvailable
		t.MinAvailable = &n
	}
	j.tasks = append(j.tasks, t)
	return j
}

// MinAvailable sets how many pods must be schedulable together for the job
// to start (default: all pods of all tasks).
func (j *VolcanoJob) MinAvailable(n int) *VolcanoJob { j.minAvailable = &n; return j }

// Plugin enables a job plugin (PluginEnv, PluginSvc, PluginSSH…) with
// its arguments, replacing earlier arguments of the same plugin.
func (j *VolcanoJob) Plugin(name string, args ...string) *VolcanoJob {
	j.plugins[name] = append([]string{}, args...)
	return j
}

// WithoutPlugin removes a plugin (the env and svc plugins are on by
// default).
func (j *VolcanoJob) WithoutPlugin(name string) *VolcanoJob { delete(j.plugins, name); return j }

// Policy adds a job lifecycle policy: on event, take action (e.g.
// vcbus.PodEvictedEvent → vcbus.RestartJobAction).
func (j *VolcanoJob) Policy(event vcbus.Event, action vcbus.Action) *VolcanoJob {
	j.policies = append(j.policies, vcbatch.LifecyclePolicy{Event: event, Action: action})
	return j
}

// MaxRetry is how many times the job is restarted before it fails
// (Volcano's default is 3).
func (j *VolcanoJob) MaxRetry(n int) *VolcanoJob { j.maxRetry = &n; return j }

// TTLAfterFinished deletes the job this long after it completed or failed
// (whole seconds, rounded up).
func (j *VolcanoJob) TTLAfterFinished(d time.Duration) *VolcanoJob { j.ttl = &d; return j }

var (
	volcanoEvents  = []vcbus.Event{vcbus.AnyEvent, vcbus.PodFailedEvent, vcbus.PodEvictedEvent, vcbus.PodPendingEvent, vcbus.PodRunningEvent, vcbus.JobUnknownEvent, vcbus.TaskCompletedEvent, vcbus.TaskFailedEvent}
	volcanoActions = []vcbus.Action{vcbus.AbortJobAction, vcbus.RestartJobAction, vcbus.RestartTaskAction, vcbus.RestartPodAction, vcbus.TerminateJobAction, vcbus.CompleteJobAction}
)

func validatePolicies(policies []vcbatch.LifecyclePolicy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, pol := range policies {
		if !slices.Contains(volcanoEvents, pol.Event) {
			errs = append(errs, field.NotSupported(p.Index(i).Child("event"), pol.Event, volcanoEvents))
		}
		if !slices.Contains(volcanoActions, pol.Action) {
			errs = append(errs, field.NotSupported(p.Index(i).Child("action"), pol.Action, volcanoActions))
		}
	}
	return errs
}

func (j *VolcanoJob) build() (*vcbatch.Job, field.ErrorList) {
	spec := field.NewPath("spec")
	longest, total := 0, 0
	for _, t := range j.tasks {
		longest = max(longest, len("-"+t.Name+"-"+strconv.Itoa(max(t.Replicas-1, 0))))
		total += max(t.Replicas, 0)
	}
	errs := j.ValidateServiceMeta(validation.DNS1035LabelMaxLength - longest)
	if len(j.tasks) == 0 {
		errs = append(errs, field.Required(spec.Child("tasks"), "at least one task is required"))
	}
	scheduler := j.SchedulerName()
	if scheduler == "" {
		scheduler = VolcanoScheduler
	}
	queue := j.QueueName()
	if queue == "" {
		queue = DefaultVolcanoQueue
	}
	job := &vcbatch.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: vcbatch.SchemeGroupVersion.String(), Kind: "Job"},
		ObjectMeta: j.ObjectMeta(j.Name()),
		Spec: vcbatch.JobSpec{
			SchedulerName:     scheduler,
			MinAvailable:      int32(total),
			Queue:             queue,
			PriorityClassName: j.PriorityClassName(),
			Plugins:           map[string][]string{},
		},
	}
	for _, name := range slices.Sorted(maps.Keys(j.plugins)) {
		if !slices.Contains(volcanoPlugins, name) {
			errs = append(errs, field.NotSupported(spec.Child("plugins").Key(name), name, volcanoPlugins))
		}
		job.Spec.Plugins[name] = slices.Clone(j.plugins[name])
	}
	if j.minAvailable != nil {
		if err := minAvailable(*j.minAvailable, total, spec.Child("minAvailable"), "pods"); err != nil {
			errs = append(errs, err)
		} else {
			job.Spec.MinAvailable = int32(*j.minAvailable)
		}
	}
	if j.maxRetry != nil {
		if *j.maxRetry < 0 {
			errs = append(errs, field.Invalid(spec.Child("maxRetry"), *j.maxRetry, "must not be negative"))
		}
		job.Spec.MaxRetry = int32(max(*j.maxRetry, 0))
	}
	job.Spec.TTLSecondsAfterFinished = optionalSeconds(j.ttl, spec.Child("ttlSecondsAfterFinished"), false, &errs)
	errs = append(errs, validatePolicies(j.policies, spec.Child("policies"))...)
	job.Spec.Policies = slices.Clone(j.policies)

	names := map[string]bool{}
	for i, t := range j.tasks {
		tPath := spec.Child("tasks").Index(i)
		for _, msg := range validation.IsDNS1123Label(t.Name) {
			errs = append(errs, field.Invalid(tPath.Child("name"), t.Name, msg))
		}
		if names[t.Name] {
			errs = append(errs, field.Duplicate(tPath.Child("name"), t.Name))
		}
		names[t.Name] = true
		errs = append(errs, atLeast(t.Replicas, 1, tPath.Child("replicas"), "replica")...)
		tmpl, tmplErrs := j.Template(tPath.Child("template"), pod.TemplateOptions{
			Container: t.Name,
			NoDevices: t.NoAccelerators,
			Labels:    map[string]string{LabelComponent: t.Name},
			Resources: cpuMemory(t.CPU, t.Memory),
		})
		errs = append(errs, tmplErrs...)
		if t.Command != nil {
			c := &tmpl.Spec.Containers[0]
			c.Command, c.Args = slices.Clone(t.Command), slices.Clone(t.Args)
		}
		tmpl.Spec.SchedulerName = scheduler
		copyJobLabels(&job.ObjectMeta, tmpl.Labels)
		task := vcbatch.TaskSpec{
			Name:     t.Name,
			Replicas: int32(max(t.Replicas, 0)),
			Template: tmpl,
			Policies: slices.Clone(t.Policies),
		}
		errs = append(errs, validatePolicies(t.Policies, tPath.Child("policies"))...)
		if t.MinAvailable != nil {
			if *t.MinAvailable < 1 || *t.MinAvailable > t.Replicas {
				errs = append(errs, field.Invalid(tPath.Child("minAvailable"), *t.MinAvailable, fmt.Sprintf("must be within 1..%d", max(t.Replicas, 1))))
			}
			n := int32(*t.MinAvailable)
			task.MinAvailable = &n
		}
		if t.MaxRetry < 0 {
			errs = append(errs, field.Invalid(tPath.Child("maxRetry"), t.MaxRetry, "must not be negative"))
		}
		task.MaxRetry = int32(max(t.MaxRetry, 0))
		job.Spec.Tasks = append(job.Spec.Tasks, task)
	}
	return job, dedupe(errs)
}

// Build validates the settings and returns the Volcano Job, or every
// problem at once.
func (j *VolcanoJob) Build() (*vcbatch.Job, error) { return result(j.build()) }

// Objects returns the Volcano Job; it implements cube.Workload.
func (j *VolcanoJob) Objects() ([]client.Object, error) { return objects(j.Build()) }
