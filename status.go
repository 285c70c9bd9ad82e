package cube

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Phase is where an object, or a whole release, stands.
type Phase string

// Phases. Ready is the goal of long-running objects (a Deployment serving);
// Succeeded and Failed end run-to-completion objects (a training job).
// Missing is an object that does not exist (never created, or deleted);
// Unknown is an object of a kind the client has no reader for (see Kind):
// cube cannot tell where it stands, and says so instead of guessing.
// Phase is the one phase type of the module: a package that reports more
// states (a pipeline step skipped or cached, a trial) declares them as
// Phase constants of its own and ends in Succeeded or Failed.
const (
	InProgress Phase = "InProgress"
	Ready      Phase = "Ready"
	Succeeded  Phase = "Succeeded"
	Failed     Phase = "Failed"
	Missing    Phase = "Missing"
	Unknown    Phase = "Unknown"
)

// ObjectStatus is the state of one object of a release, with the reason and
// message its controller gave (a condition, a phase, a replica count).
type ObjectStatus struct {
	Ref     ObjectRef
	Phase   Phase
	Reason  string
	Message string
}

func (s ObjectStatus) String() string {
	out := fmt.Sprintf("%s %s", s.Ref, s.Phase)
	if s.Reason != "" {
		out += " (" + s.Reason
		if s.Message != "" {
			out += ": " + s.Message
		}
		out += ")"
	}
	return out
}

// Status is the state of a release: one entry per object and the overall
// phase (see Summarize).
type Status struct {
	Phase   Phase
	Reason  string
	Objects []ObjectStatus
	// Pods are the problems of the release's pods (found by the release
	// label) while the release is neither Ready nor Succeeded: why a
	// rollout or a job is not moving. Release.Status and Wait fill it.
	Pods []PodProblem
	// Refusals are the pods the cluster refused to create for the
	// release's objects (a quota exceeded, Pod Security, a LimitRange, an
	// admission webhook, a missing ServiceAccount), as their controllers
	// reported them, while the release is neither Ready nor Succeeded.
	Refusals []Refusal
	// Queue says why the release's jobs wait in Kueue, or that Kueue
	// preempted them, or why Volcano has not scheduled their gang, while
	// the release is neither Ready nor Succeeded: "Queued: waiting for
	// quota in ClusterQueue team-a (nvidia.com/gpu: 4 of 4 in use,
	// borrowing 0 of 2)", "Queued: waiting in Volcano queue team-a (gang
	// of 4): …". Release.Status and Wait fill it from Kueue's Workloads
	// (owned by the job, the LeaderWorkerSet or StatefulSet, or each pod
	// of a Deployment) and Volcano's PodGroups.
	Queue []QueueWait
}

func (s Status) String() string {
	var b strings.Builder
	b.WriteString(string(s.Phase))
	if s.Reason != "" {
		b.WriteString(": " + s.Reason)
	}
	// FailOnStuckPods makes the first refusal or stuck pod the reason:
	// it is said once.
	if len(s.Refusals) > 0 {
		if first := s.Refusals[0].String(); first != s.Reason {
			b.WriteString("; " + first)
		}
		if len(s.Refusals) > 1 {
			fmt.Fprintf(&b, "; and %d more refusals", len(s.Refusals)-1)
		}
	}
	for _, q := range s.Queue {
		b.WriteString("; " + q.String())
	}
	if len(s.Pods) > 0 {
		if first := s.Pods[0].String(); first != s.Reason {
			b.WriteString("; " + first)
		}
		if len(s.Pods) > 1 {
			fmt.Fprintf(&b, "; and %d more pod problems", len(s.Pods)-1)
		}
	}
	return b.String()
}

// settled reports whether the release reached a phase pod problems no
// longer matter for.
func (s Status) settled() bool { return s.Phase == Ready || s.Phase == Succeeded }

// Summarize computes the overall phase of a release from its objects, the
// first rule that holds deciding: Failed if any object failed; Missing if
// every object is missing; InProgress if any is in progress or missing;
// Unknown if any cannot be read; Succeeded if any run-to-completion object
// succeeded (the rest being ready); Ready otherwise. A release with no
// objects is Missing.
func Summarize(objects []ObjectStatus) Status {
	st := Status{Phase: Ready, Objects: objects}
	var progress, missing, unknown, succeeded []ObjectStatus
	for _, o := range objects {
		switch o.Phase {
		case Failed:
			if st.Phase != Failed {
				st.Phase = Failed
				st.Reason = o.String()
			}
		case InProgress:
			progress = append(progress, o)
		case Missing:
			missing = append(missing, o)
		case Unknown:
			unknown = append(unknown, o)
		case Succeeded:
			succeeded = append(succeeded, o)
		case Ready:
		default: // a reader that returned no phase cannot be trusted
			o.Phase, o.Reason = Unknown, nonEmpty(o.Reason, "NoPhase")
			unknown = append(unknown, o)
		}
	}
	switch {
	case st.Phase == Failed:
	case len(missing) == len(objects):
		st.Phase = Missing
		st.Reason = "no object of the release exists"
	case len(progress)+len(missing) > 0:
		st.Phase = InProgress
		st.Reason = describe(append(progress, missing...))
	case len(unknown) > 0:
		st.Phase = Unknown
		st.Reason = describe(unknown)
	case len(succeeded) > 0:
		st.Phase = Succeeded
	}
	return st
}

// describe is the first of objs and how many more there are.
func describe(objs []ObjectStatus) string {
	out := objs[0].String()
	if len(objs) > 1 {
		out += fmt.Sprintf(" and %d more", len(objs)-1)
	}
	return out
}

// StatusFunc reads the phase of one object from its stored form.
type StatusFunc func(obj *unstructured.Unstructured) ObjectStatus

// TypedStatus adapts a reader of a typed object T to a StatusFunc: the stored
// object is converted to T first, so readers work on the upstream Go types.
func TypedStatus[T any, PT interface {
	*T
	runtime.Object
}](read func(PT) ObjectStatus) StatusFunc {
	return func(u *unstructured.Unstructured) ObjectStatus {
		obj := PT(new(T))
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
			return ObjectStatus{Phase: Failed, Reason: "Unreadable", Message: err.Error()}
		}
		return read(obj)
	}
}

// Kind is what a Client knows of one kind of object: how to read its
// phase, whether it runs to completion, and for a kind a pipeline step can
// run, the conditions Argo waits on. A Client reads the kinds of the
// Kubernetes API itself (CoreKinds) and those given with Kinds; any
// other kind reads Unknown. Each workload package lists its own
// (train.Kinds, serve.Kinds, pipeline.Kinds, tune.Kinds) and package kinds
// gathers them all, the way an API group's AddToScheme fills a scheme.
type Kind struct {
	GroupKind schema.GroupKind
	// Status reads the phase of a stored object of the kind. Kinds
	// refuses a Kind without one; ReadStatus and CompletionOf ignore it.
	Status StatusFunc
	// Completes is true for kinds that run to completion (a Job, a
	// PyTorchJob, a Workflow): only they reach Succeeded.
	Completes bool
	// Completion are the kind's success and failure conditions in the
	// grammar of Argo's resource templates; zero when a pipeline step
	// cannot wait for the kind.
	Completion Completion
}

// kindTable is a set of kinds by group and kind: a Client's, read-only
// once the client is made.
type kindTable map[schema.GroupKind]Kind

// newKindTable holds the core kinds and then kinds, a later entry of a
// group and kind replacing an earlier one.
func newKindTable(kinds ...Kind) kindTable {
	t := make(kindTable, len(coreKinds)+len(kinds))
	for _, list := range [][]Kind{coreKinds, kinds} {
		for _, k := range list {
			if k.Status != nil {
				t[k.GroupKind] = k
			}
		}
	}
	return t
}

// CoreKinds returns the kinds every Client reads: the Kubernetes API's own
// that cube creates (a Tenant's Volcano Queue is read with tenant.Kinds).
// Deployment, StatefulSet, DaemonSet, Job, Pod,
// PersistentVolumeClaim, Service, Namespace, ResourceQuota and
// ResourceClaim (Ready once allocated) are read from their status;
// ResourceClaimTemplate, ConfigMap, Secret, ServiceAccount, the RBAC kinds,
// NetworkPolicy, LimitRange, PodDisruptionBudget, HorizontalPodAutoscaler,
// PriorityClass, CronJob and Lease have no state beyond existing and are
// Ready once they exist.
func CoreKinds() []Kind { return slices.Clone(coreKinds) }

// ReadStatus returns the phase of one stored object as a Client with the
// given kinds (besides CoreKinds) reads it: a kind with no reader is
// Unknown, an object marked for deletion InProgress (Terminating), and a
// nil object Missing.
func ReadStatus(obj *unstructured.Unstructured, kinds ...Kind) ObjectStatus {
	if obj == nil {
		return ObjectStatus{Phase: Missing, Reason: "NotFound"}
	}
	return newKindTable(kinds...).read(obj)
}

// CompletionOf returns the completion conditions of a kind among kinds
// and CoreKinds; false when the kind has none.
func CompletionOf(gk schema.GroupKind, kinds ...Kind) (Completion, bool) {
	k, ok := newKindTable(kinds...)[gk]
	return k.Completion, ok && k.Completion != (Completion{})
}

func (t kindTable) read(obj *unstructured.Unstructured) ObjectStatus {
	gk := obj.GroupVersionKind().GroupKind()
	var st ObjectStatus
	if k, ok := t[gk]; ok {
		st = k.Status(obj)
	} else {
		st = ObjectStatus{Phase: Unknown, Reason: "NoReader", Message: fmt.Sprintf(
			"cube has no status reader for %s: give the client its kind with cube.Kinds (package kinds has all of cube's)", kindName(gk))}
	}
	st.Ref = RefOf(obj)
	if obj.GetDeletionTimestamp() != nil && st.Phase != Failed {
		st.Phase, st.Reason, st.Message = InProgress, "Terminating", ""
	}
	return st
}

func kindName(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

// exists is the reader of kinds whose only state is that they exist.
func exists(*unstructured.Unstructured) ObjectStatus {
	return ObjectStatus{Phase: Ready}
}

// ExistsKind returns a Kind read Ready as soon as an object of it exists:
// for a custom kind whose only state is existing, or where no controller
// reports the kind's status (the Volcano Queue of a Tenant on a cluster
// without Volcano's controller). Prefer a real reader wherever a
// controller writes status: this one cannot tell a broken object from a
// working one.
func ExistsKind(gk schema.GroupKind) Kind {
	return Kind{GroupKind: gk, Status: func(*unstructured.Unstructured) ObjectStatus {
		return ObjectStatus{Phase: Ready, Reason: "Exists"}
	}}
}

var coreKinds = func() []Kind {
	out := []Kind{
		{GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}, Status: TypedStatus(deploymentStatus)},
		{GroupKind: schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, Status: TypedStatus(statefulSetStatus)},
		{GroupKind: schema.GroupKind{Group: "apps", Kind: "DaemonSet"}, Status: TypedStatus(daemonSetStatus)},
		// The Job controller sets completionTime only when a Job succeeds, and
		// a Job carries at most five conditions (Suspended, FailureTarget,
		// SuccessCriteriaMet, Complete, Failed).
		{GroupKind: schema.GroupKind{Group: "batch", Kind: "Job"}, Status: TypedStatus(jobStatus), Completes: true, Completion: Completion{
			Success: "status.completionTime",
			Failure: AnyConditionOfType(string(batchv1.JobFailed), 5),
		}},
		{GroupKind: schema.GroupKind{Kind: "Pod"}, Status: TypedStatus(podStatus), Completes: true},
		{GroupKind: schema.GroupKind{Kind: "PersistentVolumeClaim"}, Status: TypedStatus(pvcStatus)},
		{GroupKind: schema.GroupKind{Kind: "Service"}, Status: TypedStatus(serviceStatus)},
		{GroupKind: schema.GroupKind{Kind: "Namespace"}, Status: TypedStatus(namespaceStatus)},
		{GroupKind: schema.GroupKind{Kind: "ResourceQuota"}, Status: TypedStatus(resourceQuotaStatus)},
	}
	out = append(out, claimKinds...)
	for _, gk := range []schema.GroupKind{
		{Kind: "ConfigMap"}, {Kind: "Secret"}, {Kind: "ServiceAccount"}, {Kind: "LimitRange"},
		{Group: "rbac.authorization.k8s.io", Kind: "Role"}, {Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"},
		{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}, {Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"},
		{Group: "networking.k8s.io", Kind: "NetworkPolicy"}, {Group: "policy", Kind: "PodDisruptionBudget"},
		{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}, {Group: "scheduling.k8s.io", Kind: "PriorityClass"},
		{Group: "batch", Kind: "CronJob"}, {Group: "coordination.k8s.io", Kind: "Lease"},
	} {
		out = append(out, Kind{GroupKind: gk, Status: exists})
	}
	return out
}()

// observed reports whether a controller has seen the latest spec.
func observed(generation, observedGeneration int64) bool {
	return observedGeneration >= generation
}

func deploymentStatus(d *appsv1.Deployment) ObjectStatus {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	var replicaFailure *appsv1.DeploymentCondition
	for i, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return ObjectStatus{Phase: Failed, Reason: c.Reason, Message: c.Message}
		}
		// The Deployment controller copies its ReplicaSet's ReplicaFailure
		// (reason FailedCreate, the API server's answer as the message)
		// while pods cannot be created (k8s.io/kubernetes
		// pkg/controller/deployment/sync.go, syncRolloutStatus).
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			replicaFailure = &d.Status.Conditions[i]
		}
	}
	if replicaFailure != nil {
		return ObjectStatus{Phase: InProgress, Reason: nonEmpty(replicaFailure.Reason, string(appsv1.DeploymentReplicaFailure)), Message: replicaFailure.Message}
	}
	s := d.Status
	switch {
	case !observed(d.Generation, s.ObservedGeneration):
		return ObjectStatus{Phase: InProgress, Reason: "NotObserved", Message: "controller has not seen the latest spec"}
	case s.UpdatedReplicas < want || s.AvailableReplicas < want || s.Replicas > s.UpdatedReplicas:
		return ObjectStatus{Phase: InProgress, Reason: "Rollout",
			Message: fmt.Sprintf("%d/%d updated, %d/%d available", s.UpdatedReplicas, want, s.AvailableReplicas, want)}
	}
	return ObjectStatus{Phase: Ready, Reason: "Available", Message: fmt.Sprintf("%d/%d available", s.AvailableReplicas, want)}
}

func statefulSetStatus(ss *appsv1.StatefulSet) ObjectStatus {
	want := int32(1)
	if ss.Spec.Replicas != nil {
		want = *ss.Spec.Replicas
	}
	s := ss.Status
	switch {
	case !observed(ss.Generation, s.ObservedGeneration):
		return ObjectStatus{Phase: InProgress, Reason: "NotObserved", Message: "controller has not seen the latest spec"}
	case s.ReadyReplicas < want || s.UpdatedReplicas < want || s.AvailableReplicas < want:
		return ObjectStatus{Phase: InProgress, Reason: "Rollout",
			Message: fmt.Sprintf("%d/%d ready, %d/%d updated", s.ReadyReplicas, want, s.UpdatedReplicas, want)}
	}
	return ObjectStatus{Phase: Ready, Reason: "Available", Message: fmt.Sprintf("%d/%d ready", s.ReadyReplicas, want)}
}

func jobStatus(j *batchv1.Job) ObjectStatus {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return ObjectStatus{Phase: Succeeded, Reason: nonEmpty(c.Reason, "Complete"), Message: c.Message}
		case batchv1.JobFailed:
			return ObjectStatus{Phase: Failed, Reason: nonEmpty(c.Reason, "Failed"), Message: c.Message}
		}
	}
	return ObjectStatus{Phase: InProgress, Reason: "Running",
		Message: fmt.Sprintf("%d active, %d succeeded, %d failed", j.Status.Active, j.Status.Succeeded, j.Status.Failed)}
}

func podStatus(p *corev1.Pod) ObjectStatus {
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		return ObjectStatus{Phase: Succeeded, Reason: "Succeeded"}
	case corev1.PodFailed:
		return ObjectStatus{Phase: Failed, Reason: nonEmpty(p.Status.Reason, "Failed"), Message: p.Status.Message}
	case corev1.PodRunning:
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return ObjectStatus{Phase: Ready, Reason: "Ready"}
			}
		}
		return ObjectStatus{Phase: InProgress, Reason: "Running", Message: "not ready"}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && (w.Reason == "ImagePullBackOff" || w.Reason == "ErrImagePull" || w.Reason == "CrashLoopBackOff" || w.Reason == "CreateContainerConfigError") {
			return ObjectStatus{Phase: InProgress, Reason: w.Reason, Message: cs.Name + ": " + w.Message}
		}
	}
	return ObjectStatus{Phase: InProgress, Reason: nonEmpty(string(p.Status.Phase), "Pending")}
}

func pvcStatus(c *corev1.PersistentVolumeClaim) ObjectStatus {
	switch c.Status.Phase {
	case corev1.ClaimBound:
		return ObjectStatus{Phase: Ready, Reason: "Bound"}
	case corev1.ClaimLost:
		return ObjectStatus{Phase: Failed, Reason: "Lost"}
	}
	// A claim of a WaitForFirstConsumer class stays Pending until a pod uses
	// it; that is its resting state, so Pending counts as ready.
	return ObjectStatus{Phase: Ready, Reason: nonEmpty(string(c.Status.Phase), "Pending"), Message: "bound when first used"}
}

func serviceStatus(s *corev1.Service) ObjectStatus {
	if s.Spec.Type == corev1.ServiceTypeLoadBalancer && len(s.Status.LoadBalancer.Ingress) == 0 {
		return ObjectStatus{Phase: InProgress, Reason: "LoadBalancerPending", Message: "no ingress address yet"}
	}
	return ObjectStatus{Phase: Ready, Reason: "Ready"}
}

func daemonSetStatus(ds *appsv1.DaemonSet) ObjectStatus {
	s := ds.Status
	switch {
	case !observed(ds.Generation, s.ObservedGeneration):
		return ObjectStatus{Phase: InProgress, Reason: "NotObserved", Message: "controller has not seen the latest spec"}
	case s.UpdatedNumberScheduled < s.DesiredNumberScheduled || s.NumberAvailable < s.DesiredNumberScheduled:
		return ObjectStatus{Phase: InProgress, Reason: "Rollout",
			Message: fmt.Sprintf("%d/%d updated, %d/%d available", s.UpdatedNumberScheduled, s.DesiredNumberScheduled, s.NumberAvailable, s.DesiredNumberScheduled)}
	}
	return ObjectStatus{Phase: Ready, Reason: "Available", Message: fmt.Sprintf("%d/%d available", s.NumberAvailable, s.DesiredNumberScheduled)}
}

// namespaceStatus: a namespace is Ready while Active; one being deleted
// is Terminating (which ReadStatus says from its deletion timestamp).
func namespaceStatus(ns *corev1.Namespace) ObjectStatus {
	if ns.Status.Phase == corev1.NamespaceTerminating {
		return ObjectStatus{Phase: InProgress, Reason: "Terminating"}
	}
	return ObjectStatus{Phase: Ready, Reason: nonEmpty(string(ns.Status.Phase), string(corev1.NamespaceActive))}
}

// resourceQuotaStatus: a quota is enforceable only once the quota
// controller has filled status.hard with every resource of spec.hard;
// until then the API server refuses every pod it covers ("status unknown
// for quota", k8s.io/apiserver/pkg/admission/plugin/resourcequota/
// controller.go), so a Tenant whose quota is not yet counted is not Ready.
func resourceQuotaStatus(q *corev1.ResourceQuota) ObjectStatus {
	var missing []string
	for name, want := range q.Spec.Hard {
		if got, ok := q.Status.Hard[name]; !ok || got.Cmp(want) != 0 {
			missing = append(missing, string(name))
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return ObjectStatus{Phase: InProgress, Reason: "NotCounted",
			Message: "the quota controller has not counted " + strings.Join(missing, ", ") + " yet: pods it covers are refused until it has"}
	}
	return ObjectStatus{Phase: Ready, Reason: "Enforced"}
}

func nonEmpty(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// Completion states when a run-to-completion kind has succeeded or failed,
// in the JSON-path selector syntax of Argo Workflows' resource templates
// (successCondition/failureCondition): comma-separated requirements on
// JSON paths parsed as label selectors, e.g. Success "status.succeeded > 0"
// and Failure "status.failed > 3". A Kind that a pipeline step can run
// carries its Completion, so that the step creates the object and waits
// for it exactly as Release.Wait would.
type Completion struct {
	Success string
	Failure string
}

// AnyConditionOfType returns the requirements that match a condition of
// type condType at any of the first positions places of status.conditions,
// for the Failure of a Completion. Argo's selector grammar cannot search a
// list by field, but it fails a step when any one failure requirement
// matches, so listing each position finds the condition wherever the
// controller appended it.
func AnyConditionOfType(condType string, positions int) string {
	reqs := make([]string, positions)
	for i := range reqs {
		reqs[i] = fmt.Sprintf("status.conditions.%d.type == %s", i, condType)
	}
	return strings.Join(reqs, ", ")
}
