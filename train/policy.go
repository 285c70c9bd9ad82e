package train

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/retry"
)

// VolcanoScheduler is the scheduler name of Volcano, which gang-schedules
// training jobs (pod.VolcanoScheduler).
const VolcanoScheduler = podspec.VolcanoScheduler

// Lifecycle holds how long a job may run, how often it is retried and
// what happens when it ends: the settings the training-operator jobs (through
// RunPolicy) and KubeRay's RayJob share. The builders embed it by name; its
// methods return the embedding builder.
type Lifecycle[T any] struct {
	self     *T
	ttl      *time.Duration
	deadline *time.Duration
	retry    *retry.Policy
	suspend  bool
}

// ret is what a setter returns: the builder it set, or, on a zero value
// that no constructor made (self is nil), a fresh zero value, so that a
// chain of setters goes on without a nil dereference and the builder's
// Objects reports that it was never made.
func (l *Lifecycle[T]) ret() *T {
	if l.self == nil {
		return new(T)
	}
	return l.self
}

// TTLAfterFinished deletes the job this long after it finished (whole
// seconds, rounded up). Zero deletes it at once.
func (l *Lifecycle[T]) TTLAfterFinished(d time.Duration) *T { l.ttl = &d; return l.ret() }

// ActiveDeadline fails the job when it has run this long (whole seconds,
// rounded up).
func (l *Lifecycle[T]) ActiveDeadline(d time.Duration) *T { l.deadline = &d; return l.ret() }

// Retry sets how many times the job is tried again after it failed:
// r.Limit becomes the training-operator's runPolicy.backoffLimit ("number of
// retries before marking this job failed", pkg/apis/kubeflow.org/v1/
// common_types.go of v1.8.1, counted over the replicas' restarts by
// PastBackoffLimit in pkg/core/job.go) or KubeRay's spec.backoffLimit ("each
// retry creates a new RayCluster", checkBackoffLimitAndUpdateStatusIfNeeded
// in controllers/ray/rayjob_controller.go of v1.5.0).
//
// Neither engine waits between attempts by a setting of its own (the
// training-operator's pods restart with the kubelet's back-off, KubeRay
// retries at once) nor stops retrying after a time, so a Backoff, Factor,
// MaxBackoff or MaxDuration is refused by Objects rather than dropped;
// ActiveDeadline bounds a whole run.
func (l *Lifecycle[T]) Retry(r retry.Policy) *T { l.retry = &r; return l.ret() }

// Suspend creates the job suspended (true) or running (false, the
// default); a suspended job creates no pods until it is resumed.
func (l *Lifecycle[T]) Suspend(on bool) *T { l.suspend = on; return l.ret() }

// lifecyclePaths are where a kind keeps the lifecycle fields, and the
// engine that reads them (for the messages).
type lifecyclePaths struct {
	ttl, deadline, backoff *field.Path
	engine                 string
}

// lifecycle is the validated form of a Lifecycle.
type lifecycle struct {
	ttl      *int32
	deadline *int64
	backoff  *int32
	suspend  bool
}

func (l *Lifecycle[T]) render(p lifecyclePaths) (lifecycle, field.ErrorList) {
	var errs field.ErrorList
	out := lifecycle{suspend: l.suspend}
	out.ttl = optionalSeconds(l.ttl, p.ttl, false, &errs)
	if d := optionalSeconds(l.deadline, p.deadline, true, &errs); d != nil {
		secs := int64(*d)
		out.deadline = &secs
	}
	if l.retry != nil {
		out.backoff = retryLimit(*l.retry, p.backoff, field.NewPath("retry"), 0, p.engine, &errs)
	}
	return out, errs
}

// retryLimit checks a retry.Policy for an engine that carries only a count
// of retries, and returns that count plus offset (an engine that counts the
// first run too) for the field at limitPath. A bad Limit is reported there;
// the other fields under setting (the setter's name: retry, elasticRetry,
// spec.tasks[0].retry), a wait or a time window, which the engine cannot
// carry, refused by name.
func retryLimit(r retry.Policy, limitPath, setting *field.Path, offset int, engine string, errs *field.ErrorList) *int32 {
	for _, pr := range r.Problems() {
		if pr.Field == "limit" {
			*errs = append(*errs, field.Invalid(limitPath, r.Limit, pr.Detail))
			continue
		}
		*errs = append(*errs, field.Invalid(setting.Child(pr.Field), pr.Value, pr.Detail))
	}
	unsupported := func(name string, set bool, what string) {
		if set {
			*errs = append(*errs, field.Forbidden(setting.Child(name), engine+" has no "+what+": leave "+strings.ToUpper(name[:1])+name[1:]+" zero"))
		}
	}
	unsupported("backoff", r.Backoff > 0, "wait between retries of its own")
	unsupported("factor", r.Factor > 1, "growing wait between retries")
	unsupported("maxBackoff", r.MaxBackoff > 0, "cap on the wait between retries")
	unsupported("maxDuration", r.MaxDuration > 0, "time after which retries stop (ActiveDeadline bounds a whole run)")
	if r.Limit < 0 {
		return nil
	}
	switch {
	case offset == 0 && r.Limit > math.MaxInt32:
		*errs = append(*errs, field.Invalid(limitPath, r.Limit, "must fit in 32 bits"))
		return nil
	case r.Limit > math.MaxInt32-offset:
		*errs = append(*errs, field.Invalid(limitPath, r.Limit, fmt.Sprintf("must be at most %d (%s counts the first run too)", math.MaxInt32-offset, engine)))
		return nil
	}
	v := int32(r.Limit + offset)
	return &v
}

// optionalSeconds converts an optional duration to whole seconds (nil when
// d is nil or wrong, with the problem added to errs).
func optionalSeconds(d *time.Duration, p *field.Path, positive bool, errs *field.ErrorList) *int32 {
	if d == nil {
		return nil
	}
	secs, err := seconds(*d, p, positive)
	if err != nil {
		*errs = append(*errs, err)
		return nil
	}
	v := int32(secs)
	return &v
}

// minAvailable checks a gang size n against the total pods or replicas
// (what names them in the message).
func minAvailable(n, total int, p *field.Path, what string) *field.Error {
	switch {
	case n < 1:
		return field.Invalid(p, n, "must be at least 1")
	case n > total:
		return field.Invalid(p, n, fmt.Sprintf("must not exceed the job's %d %s", total, what))
	}
	return nil
}

// seconds converts d to whole seconds, rounding up, within int32.
func seconds(d time.Duration, p *field.Path, positive bool) (int64, *field.Error) {
	switch {
	case d < 0:
		return 0, field.Invalid(p, d.String(), "must not be negative")
	case positive && d == 0:
		return 0, field.Invalid(p, d.String(), "must be positive")
	}
	secs := int64((d + time.Second - 1) / time.Second)
	if secs > math.MaxInt32 {
		return 0, field.Invalid(p, d.String(), fmt.Sprintf("must be at most %d seconds", math.MaxInt32))
	}
	return secs, nil
}

// RunPolicy is the run policy every training-operator job shares (PyTorch,
// TensorFlow, MPI, Horovod, DeepSpeed, ColossalAI, Paddle, XGBoost, MXNet):
// the clean-pod policy, the replicas' restart policy and gang scheduling
// through Volcano below, and the Lifecycle settings it embeds
// (TTLAfterFinished, ActiveDeadline, Retry, Suspend: go doc
// train.Lifecycle). The builders embed it by name; its methods return the
// embedding builder.
type RunPolicy[T any] struct {
	Lifecycle[T]
	cleanPod     *kubeflowv1.CleanPodPolicy
	restart      *kubeflowv1.RestartPolicy
	gang         bool
	minAvailable *int
}

func (r *RunPolicy[T]) initRunPolicy(self *T) { r.Lifecycle.self = self }

// CleanPodPolicy says which pods are deleted when the job finishes:
// kubeflowv1.CleanPodPolicyAll, Running or None.
//
// cube's default is Running, not the operator's None: pods that still run
// when the job has finished are deleted, finished pods (and their logs)
// are kept. Under None an MPIJob's workers, which sleep until mpirun
// reaches them (`sleep 365d`, pkg/controller.v1/mpi), a TFJob's parameter
// servers and Evaluator, an MXJob's Scheduler and Servers and a PaddleJob's
// servers, which never exit by themselves, keep running and keep their
// accelerators after the job ended (the operator deletes pods only as
// DeletePodsAndServices in pkg/controller.v1/common/job.go says). Set None
// to keep them, for debugging.
func (r *RunPolicy[T]) CleanPodPolicy(p kubeflowv1.CleanPodPolicy) *T {
	r.cleanPod = &p
	return r.Lifecycle.ret()
}

// RestartPolicy sets the restart policy of every replica: Always,
// OnFailure, Never or ExitCode (restart on retryable exit codes). Unset,
// each replica gets the operator's default for the framework.
func (r *RunPolicy[T]) RestartPolicy(p kubeflowv1.RestartPolicy) *T {
	r.restart = &p
	return r.Lifecycle.ret()
}

// Gang schedules all replicas together through Volcano: the pods get
// schedulerName volcano and the job a scheduling policy (minAvailable = all
// replicas unless GangMinAvailable says otherwise, the Queue and the
// PriorityClass of the pod settings).
//
// The training-operator creates the PodGroup only when it runs with
// --gang-scheduler-name=volcano (EnableGangScheduling in
// pkg/controller.v1/common/job.go); without the flag the pods go to Volcano
// one by one, without a gang. Of the scheduling policy the operator copies
// only minAvailable, the queue, the priority class and minResources to the
// Volcano PodGroup, which has no schedule timeout; the operator's
// scheduleTimeoutSeconds reaches only the scheduler-plugins PodGroup, so
// cube, which gang-schedules through Volcano, does not offer it.
func (r *RunPolicy[T]) Gang() *T { r.gang = true; return r.Lifecycle.ret() }

// GangMinAvailable gang-schedules the job (as Gang) with at least n pods
// started together.
func (r *RunPolicy[T]) GangMinAvailable(n int) *T {
	r.gang = true
	r.minAvailable = &n
	return r.Lifecycle.ret()
}

var (
	cleanPodPolicies = []kubeflowv1.CleanPodPolicy{kubeflowv1.CleanPodPolicyAll, kubeflowv1.CleanPodPolicyRunning, kubeflowv1.CleanPodPolicyNone}
	restartPolicies  = []kubeflowv1.RestartPolicy{kubeflowv1.RestartPolicyAlways, kubeflowv1.RestartPolicyOnFailure, kubeflowv1.RestartPolicyNever, kubeflowv1.RestartPolicyExitCode}
)

// gangSettings is what the pod templates and the scheduling policy need.
type gangSettings struct {
	on           bool
	minAvailable int32
}

// render returns the run policy for a job whose gang needs gangSize pods
// (all replicas, or the elastic minimum) out of total.
func (r *RunPolicy[T]) render(queue, priorityClass, scheduler string, gangSize, total int32) (kubeflowv1.RunPolicy, gangSettings, field.ErrorList) {
	path := field.NewPath("spec", "runPolicy")
	lc, errs := r.Lifecycle.render(lifecyclePaths{
		ttl:      path.Child("ttlSecondsAfterFinished"),
		deadline: path.Child("activeDeadlineSeconds"),
		backoff:  path.Child("backoffLimit"),
		engine:   "the training-operator",
	})
	rp := kubeflowv1.RunPolicy{
		TTLSecondsAfterFinished: lc.ttl,
		ActiveDeadlineSeconds:   lc.deadline,
		BackoffLimit:            lc.backoff,
	}
	if lc.suspend {
		rp.Suspend = &lc.suspend
	}
	cleanPod := kubeflowv1.CleanPodPolicyRunning
	if r.cleanPod != nil {
		cleanPod = *r.cleanPod
	}
	if !slices.Contains(cleanPodPolicies, cleanPod) {
		errs = append(errs, field.NotSupported(path.Child("cleanPodPolicy"), cleanPod, cleanPodPolicies))
	} else {
		rp.CleanPodPolicy = &cleanPod
	}
	gang := gangSettings{on: r.gang, minAvailable: gangSize}
	if !r.gang {
		return rp, gang, errs
	}
	spPath := path.Child("schedulingPolicy")
	if scheduler != "" && scheduler != VolcanoScheduler {
		errs = append(errs, field.Invalid(field.NewPath("schedulerName"), scheduler,
			"gang scheduling runs through Volcano; remove Scheduler or set it to "+VolcanoScheduler))
	}
	if r.minAvailable != nil {
		if err := minAvailable(*r.minAvailable, int(total), spPath.Child("minAvailable"), "replicas"); err != nil {
			errs = append(errs, err)
		} else {
			gang.minAvailable = int32(*r.minAvailable)
		}
	}
	minAvailable := gang.minAvailable
	rp.SchedulingPolicy = &kubeflowv1.SchedulingPolicy{
		MinAvailable:  &minAvailable,
		Queue:         queue,
		PriorityClass: priorityClass,
	}
	return rp, gang, errs
}
