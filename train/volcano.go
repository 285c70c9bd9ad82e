package train

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcbus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/retry"
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
	// PluginHCCLRank gives the pods of Ascend jobs their HCCL ranks
	// (distributed-framework/hcclrank).
	PluginHCCLRank = "hcclrank"
)

// volcanoPlugins are the job plugins Volcano v1.14 registers
// (pkg/controllers/job/plugins/factory.go); its admission webhook refuses
// any other.
var volcanoPlugins = []string{PluginEnv, PluginSvc, PluginSSH, "pytorch", "tensorflow", "mpi", PluginHCCLRank, "ray"}

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
	// Retry is how often the task's pods are tried again before the task
	// fails (a TaskFailed event for Policies to act on): task maxRetry =
	// Limit + 1, because Volcano v1.14 declares the task failed as soon as
	// its pods' restarts reach maxRetry (TaskFailed in
	// pkg/controllers/cache/cache.go), before that run could finish. Nil
	// leaves Volcano's default (maxRetry 3). Only Limit is carried.
	Retry *retry.Policy
	// RestartPolicy of the task's pods (empty: the job's, see
	// VolcanoJob.RestartPolicy).
	RestartPolicy corev1.RestartPolicy
}

// VolcanoJob builds a Volcano batch.volcano.sh/v1alpha1 Job: tasks of pods
// gang-scheduled together (minAvailable), the env, svc and ssh plugins that
// let the pods find each other, a queue, lifecycle policies (restart the
// job when a pod is evicted…) and a retry limit. Create one with Volcano.
//
// Its settings are its own methods below and every pod setting (image,
// command, env, resources, Accelerators, On, Fabric, Queue…: go doc
// pod.Builder), which every task's pods take.
type VolcanoJob struct {
	pod.Builder[VolcanoJob]
	tasks        []VolcanoTask
	minAvailable *int
	plugins      map[string][]string
	policies     []vcbatch.LifecyclePolicy
	retry        *retry.Policy
	ttl          *time.Duration
	restart      corev1.RestartPolicy
}

// Volcano starts a Volcano job named name with the env and svc plugins;
// add at least one task.
func Volcano(name string) *VolcanoJob {
	j := &VolcanoJob{plugins: map[string][]string{PluginEnv: {}, PluginSvc: {}}}
	podspec.Of(&j.Handle).Init(j, "volcanojob", name)
	return j
}

// Task adds a task of replicas pods running the job's command line.
func (j *VolcanoJob) Task(name string, replicas int) *VolcanoJob {
	if j == nil {
		return nil
	}
	return j.AddTask(VolcanoTask{Name: name, Replicas: replicas})
}

// AddTask adds a task described in full.
func (j *VolcanoJob) AddTask(t VolcanoTask) *VolcanoJob {
	if j == nil {
		return nil
	}
	t.Command, t.Args = slices.Clone(t.Command), slices.Clone(t.Args)
	t.Policies = slices.Clone(t.Policies)
	if t.Retry != nil {
		r := *t.Retry
		t.Retry = &r
	}
	if t.MinAvailable != nil {
		n := *t.MinAvailable
		t.MinAvailable = &n
	}
	j.tasks = append(j.tasks, t)
	return j
}

// MinAvailable sets how many pods must be schedulable together for the job
// to start (default: all pods of all tasks).
func (j *VolcanoJob) MinAvailable(n int) *VolcanoJob {
	if j == nil {
		return nil
	}
	j.minAvailable = &n
	return j
}

// Plugin enables a job plugin (PluginEnv, PluginSvc, PluginSSH…) with
// its arguments, replacing earlier arguments of the same plugin.
func (j *VolcanoJob) Plugin(name string, args ...string) *VolcanoJob {
	if j == nil {
		return nil
	}
	if j.plugins == nil {
		j.plugins = map[string][]string{}
	}
	j.plugins[name] = append([]string{}, args...)
	return j
}

// RestartPolicy sets the restart policy of every task's pods (a task's own
// RestartPolicy wins): corev1.RestartPolicyOnFailure (the default),
// RestartPolicyNever or RestartPolicyAlways.
//
// Volcano neither defaults it nor checks it (its job webhooks leave the
// template as given), so a pod without one gets the API's Always and its
// task never completes. Under OnFailure the kubelet restarts a failed
// container in place and the pod never reaches Failed, so a PodFailed
// policy needs RestartPolicyNever; Objects reports the combination.
func (j *VolcanoJob) RestartPolicy(p corev1.RestartPolicy) *VolcanoJob {
	if j == nil {
		return nil
	}
	j.restart = p
	return j
}

// RemovePlugin removes a plugin (the env and svc plugins are on by
// default).
func (j *VolcanoJob) RemovePlugin(name string) *VolcanoJob {
	if j == nil {
		return nil
	}
	delete(j.plugins, name)
	return j
}

// Policy adds a job lifecycle policy: on event, take action (e.g.
// vcbus.PodEvictedEvent → vcbus.RestartJobAction).
func (j *VolcanoJob) Policy(event vcbus.Event, action vcbus.Action) *VolcanoJob {
	if j == nil {
		return nil
	}
	j.policies = append(j.policies, vcbatch.LifecyclePolicy{Event: event, Action: action})
	return j
}

// Retry sets how many times the job is restarted (by a RestartJob or
// Restart* policy) before it fails, as Lifecycle.Retry does for the other
// jobs. Volcano counts the first run in spec.maxRetry: a restart adds one
// to status.retryCount and the job fails once retryCount reaches maxRetry,
// without running again (restartingUpdateStatus in
// pkg/controllers/job/state/restarting.go of v1.14), so maxRetry is
// r.Limit + 1. Unset, Volcano's default maxRetry 3 applies. Volcano
// restarts at once and has no retry window, so a Backoff, Factor,
// MaxBackoff or MaxDuration is refused.
func (j *VolcanoJob) Retry(r retry.Policy) *VolcanoJob {
	if j == nil {
		return nil
	}
	j.retry = &r
	return j
}

// TTLAfterFinished deletes the job this long after it completed or failed
// (whole seconds, rounded up).
func (j *VolcanoJob) TTLAfterFinished(d time.Duration) *VolcanoJob {
	if j == nil {
		return nil
	}
	j.ttl = &d
	return j
}

// The lifecycle events and actions Volcano v1.14's job webhook lets users
// set (policyEventMap and policyActionMap in
// pkg/webhooks/admission/jobs/validate/util.go; it refuses PodRunning).
var (
	volcanoEvents  = []vcbus.Event{vcbus.AnyEvent, vcbus.PodFailedEvent, vcbus.PodEvictedEvent, vcbus.PodPendingEvent, vcbus.JobUnknownEvent, vcbus.TaskCompletedEvent, vcbus.TaskFailedEvent, vcbus.JobUpdatedEvent}
	volcanoActions = []vcbus.Action{vcbus.AbortJobAction, vcbus.RestartJobAction, vcbus.RestartTaskAction, vcbus.RestartPodAction, vcbus.RestartPartitionAction, vcbus.TerminateJobAction, vcbus.CompleteJobAction, vcbus.ResumeJobAction}
)

// podRestartPolicies are the restart policies a pod takes.
var podRestartPolicies = []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever, corev1.RestartPolicyAlways}

func hasPodFailedPolicy(policies []vcbatch.LifecyclePolicy) bool {
	for _, p := range policies {
		if p.Event == vcbus.PodFailedEvent || slices.Contains(p.Events, vcbus.PodFailedEvent) {
			return true
		}
	}
	return false
}

// validatePolicies checks lifecycle policies as Volcano's webhook does,
// reporting every problem: an event (or events) or an exit code, not
// both; known events and actions; no event in two policies; "*" alone.
func validatePolicies(policies []vcbatch.LifecyclePolicy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[vcbus.Event]bool{}
	codes := map[int32]bool{}
	for i, pol := range policies {
		pPath := p.Index(i)
		events := slices.Clone(pol.Events)
		if pol.Event != "" && !slices.Contains(events, pol.Event) {
			events = append(events, pol.Event)
		}
		switch {
		case len(events) > 0 && pol.ExitCode != nil:
			errs = append(errs, field.Forbidden(pPath.Child("exitCode"), "a policy reacts to events or to an exit code, not both"))
		case len(events) == 0 && pol.ExitCode == nil:
			errs = append(errs, field.Required(pPath.Child("event"), "an event or an exit code is required"))
		case pol.ExitCode != nil:
			switch code := *pol.ExitCode; {
			case code == 0:
				errs = append(errs, field.Invalid(pPath.Child("exitCode"), code, "0 is not a failure"))
			case codes[code]:
				errs = append(errs, field.Duplicate(pPath.Child("exitCode"), code))
			}
			codes[*pol.ExitCode] = true
		}
		for _, ev := range events {
			evPath := pPath.Child("event")
			if pol.Event != ev {
				evPath = pPath.Child("events").Index(slices.Index(pol.Events, ev))
			}
			switch {
			case !slices.Contains(volcanoEvents, ev):
				errs = append(errs, field.NotSupported(evPath, ev, volcanoEvents))
			case seen[ev]:
				errs = append(errs, field.Duplicate(evPath, ev))
			}
			seen[ev] = true
		}
		if !slices.Contains(volcanoActions, pol.Action) {
			errs = append(errs, field.NotSupported(pPath.Child("action"), pol.Action, volcanoActions))
		}
	}
	if seen[vcbus.AnyEvent] && len(seen) > 1 {
		errs = append(errs, field.Invalid(p, vcbus.AnyEvent, `a policy for every event ("*") leaves room for no other`))
	}
	return errs
}

func (j *VolcanoJob) build() (*vcbatch.Job, field.ErrorList) {
	if j == nil || unmade(&j.Builder) {
		return nil, unmadeErrors("train.VolcanoJob", "Volcano")
	}
	spec := field.NewPath("spec")
	longest, total := 0, 0
	for _, t := range j.tasks {
		longest = max(longest, len("-"+t.Name+"-"+strconv.Itoa(max(t.Replicas-1, 0))))
		total += max(min(t.Replicas, math.MaxInt32), 0)
	}
	errs := podspec.Of(&j.Handle).ValidateServiceMeta(validation.DNS1035LabelMaxLength - longest)
	if total > math.MaxInt32 {
		errs = append(errs, field.Invalid(spec.Child("tasks"), total, "the job's pods must number at most 2147483647"))
	}
	errs = append(errs, podspec.Of(&j.Handle).SettingErrors()...)
	if len(j.tasks) == 0 {
		errs = append(errs, field.Required(spec.Child("tasks"), "at least one task is required"))
	}
	scheduler := podspec.Of(&j.Handle).SchedulerName()
	if scheduler == "" {
		scheduler = VolcanoScheduler
	}
	queue := podspec.Of(&j.Handle).QueueName()
	if queue == "" {
		queue = DefaultVolcanoQueue
	}
	job := &vcbatch.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: vcbatch.SchemeGroupVersion.String(), Kind: "Job"},
		ObjectMeta: podspec.Of(&j.Handle).ObjectMeta(podspec.Of(&j.Handle).Name()),
		Spec: vcbatch.JobSpec{
			SchedulerName:     scheduler,
			MinAvailable:      clamp32(total),
			Queue:             queue,
			PriorityClassName: podspec.Of(&j.Handle).PriorityClassName(),
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
	if j.retry != nil {
		if n := retryLimit(*j.retry, spec.Child("maxRetry"), field.NewPath("retry"), 1, "Volcano", &errs); n != nil {
			job.Spec.MaxRetry = *n
		}
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
		if t.Replicas > math.MaxInt32 {
			errs = append(errs, field.Invalid(tPath.Child("replicas"), t.Replicas, "must fit in 32 bits"))
		}
		restart := cmp.Or(t.RestartPolicy, j.restart, corev1.RestartPolicyOnFailure)
		restartPath := tPath.Child("template", "spec", "restartPolicy")
		if !slices.Contains(podRestartPolicies, restart) {
			errs = append(errs, field.NotSupported(restartPath, restart, podRestartPolicies))
		} else if restart != corev1.RestartPolicyNever && (hasPodFailedPolicy(j.policies) || hasPodFailedPolicy(t.Policies)) {
			errs = append(errs, field.Invalid(restartPath, restart,
				"a PodFailed policy never fires while the kubelet restarts failed containers in place: set RestartPolicy(corev1.RestartPolicyNever)"))
		}
		tmpl, tmplErrs := podspec.Of(&j.Handle).Template(tPath.Child("template"), podspec.TemplateOptions{
			Container:          t.Name,
			NoGPUs:             t.NoAccelerators,
			Labels:             map[string]string{LabelComponent: t.Name},
			Resources:          cpuMemory(t.CPU, t.Memory),
			RestartPolicy:      restart,
			ScheduledByVolcano: scheduler == VolcanoScheduler,
			OmitSettingErrors:  true,
		})
		errs = append(errs, sharedPlacement(tmplErrs, tPath.Child("template"))...)
		if t.Command != nil {
			c := &tmpl.Spec.Containers[0]
			c.Command, c.Args = slices.Clone(t.Command), slices.Clone(t.Args)
		}
		tmpl.Spec.SchedulerName = scheduler
		errs = append(errs, checkTemplatePorts(tmpl, tPath.Child("template"))...)
		copyJobLabels(&job.ObjectMeta, tmpl.Labels)
		task := vcbatch.TaskSpec{
			Name:     t.Name,
			Replicas: clamp32(t.Replicas),
			Template: tmpl,
			Policies: slices.Clone(t.Policies),
		}
		errs = append(errs, validatePolicies(t.Policies, tPath.Child("policies"))...)
		if t.MinAvailable != nil {
			if *t.MinAvailable < 1 || *t.MinAvailable > t.Replicas {
				errs = append(errs, field.Invalid(tPath.Child("minAvailable"), *t.MinAvailable, fmt.Sprintf("must be within 1..%d", max(t.Replicas, 1))))
			}
			n := clamp32(*t.MinAvailable)
			task.MinAvailable = &n
		}
		if t.Retry != nil {
			if n := retryLimit(*t.Retry, tPath.Child("maxRetry"), tPath.Child("retry"), 1, "Volcano", &errs); n != nil {
				task.MaxRetry = *n
			}
		}
		job.Spec.Tasks = append(job.Spec.Tasks, task)
	}
	return job, dedupe(errs)
}

// Build validates the settings and returns the Volcano Job, or every
// problem at once.
func (j *VolcanoJob) Build() (*vcbatch.Job, error) { return result(j.build()) }

// Objects returns the Volcano Job; it implements cube.Workload.
func (j *VolcanoJob) Objects() ([]client.Object, error) { return objects(j.Build()) }
