package tenant

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
)

// PodPriority is one of the platform's PriorityClasses
// (scheduling.k8s.io/v1): the name a pod gives itself with PriorityClass
// (pod.Builder), its value, higher first, and what kube-scheduler does for
// it.
type PodPriority struct {
	Name        string
	Value       int32
	Description string
	// NoPreemption makes the class's pods wait for room, ahead of lower
	// pods in the scheduling queue, instead of evicting pods of lower
	// priority (preemptionPolicy Never). Otherwise PreemptLowerPriority.
	NoPreemption bool
	// Default gives the class to every pod that names none (globalDefault).
	// A cluster has at most one: the API server's Priority admission
	// plugin refuses a second, and that refusal reaches Apply's caller.
	Default bool
}

// highestUserPriority is the largest value a PriorityClass outside the
// system's own may have (k8s.io/kubernetes pkg/apis/scheduling/types.go
// HighestUserDefinablePriority, enforced by
// pkg/apis/scheduling/validation/validation.go ValidatePriorityClass).
const highestUserPriority = 1_000_000_000

// systemPriorityPrefix starts the names reserved for the system's own
// classes (pkg/apis/scheduling/types.go SystemPriorityClassPrefix).
const systemPriorityPrefix = "system-"

// PodPriorities is the platform's workload of PriorityClasses: the
// priorities kube-scheduler schedules pods by and, unless NoPreemption,
// evicts pods of lower priority for. They are cluster-wide and shared by
// every tenant, so they belong to one release of their own that the
// platform applies once, never with a tenant; a release deletes only the
// classes it created. The API server keeps a class's value and
// preemption policy once created (ValidatePriorityClassUpdate): applying
// the release again with either changed is refused, with that reason.
// Kueue's WorkloadPriorityClasses (Priorities) order a queue's admission
// instead; a Kueue job with no WorkloadPriority is admitted by the value
// of the first PriorityClass its pod sets name, else the default class's
// (sigs.k8s.io/kueue v0.17.0 pkg/controller/jobframework/reconciler.go
// ExtractPriority).
func PodPriorities(release string, ps ...PodPriority) cube.Workload {
	return cube.WorkloadFunc(func() ([]client.Object, error) {
		errs := priorityNames(release, ps, func(name string) []string {
			msgs := validation.IsDNS1123Subdomain(name)
			if strings.HasPrefix(name, systemPriorityPrefix) {
				msgs = append(msgs, fmt.Sprintf("the prefix %q is reserved for the system's classes", systemPriorityPrefix))
			}
			return msgs
		})
		id := cube.Identity{Kind: "pod-priorities", Release: release}
		defaults := 0
		var objs []client.Object
		for i, p := range ps {
			if p.Value > highestUserPriority {
				errs = append(errs, field.Invalid(field.NewPath("priorities").Index(i).Child("value"), p.Value,
					fmt.Sprintf("must be at most %d, the highest value a class outside the system's may have", highestUserPriority)))
			}
			if p.Default {
				if defaults++; defaults == 2 {
					errs = append(errs, field.Invalid(field.NewPath("priorities").Index(i).Child("default"), true, "only one class may be the default"))
				}
			}
			policy := corev1.PreemptLowerPriority
			if p.NoPreemption {
				policy = corev1.PreemptNever
			}
			objs = append(objs, &schedulingv1.PriorityClass{
				TypeMeta:         metav1.TypeMeta{APIVersion: schedulingv1.SchemeGroupVersion.String(), Kind: "PriorityClass"},
				ObjectMeta:       id.ObjectMeta(p.Name, "", nil, nil),
				Value:            p.Value,
				GlobalDefault:    p.Default,
				Description:      p.Description,
				PreemptionPolicy: ptr.To(policy),
			})
		}
		if len(errs) > 0 {
			return nil, errs.ToAggregate()
		}
		return objs, nil
	})
}

// named is a cluster-wide priority: Priority or PodPriority.
type named interface{ name() string }

func (p Priority) name() string    { return p.Name }
func (p PodPriority) name() string { return p.Name }

// priorityNames checks what every list of cluster-wide priorities needs:
// the release name, at least one priority, each name valid by nameErrs
// and given once.
func priorityNames[P named](release string, ps []P, nameErrs func(string) []string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(release) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), release, msg))
	}
	if len(ps) == 0 {
		errs = append(errs, field.Required(field.NewPath("priorities"), "at least one priority"))
	}
	seen := map[string]bool{}
	for i, p := range ps {
		name := p.name()
		path := field.NewPath("priorities").Index(i).Child("name")
		for _, msg := range nameErrs(name) {
			errs = append(errs, field.Invalid(path, name, msg))
		}
		if seen[name] {
			errs = append(errs, field.Duplicate(path, name))
		}
		seen[name] = true
	}
	return errs
}
