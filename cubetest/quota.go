package cubetest

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
)

// This file counts what Kubernetes' quota evaluators count, for the quota
// admission cubetest plays (admission.go), at k8s v1.37.2:
//
//   - a Pod: pkg/quota/v1/evaluator/core/pods.go (PodUsageFunc): pods and
//     count/pods; requests.cpu, requests.memory,
//     requests.ephemeral-storage (and cpu, memory, ephemeral-storage, the
//     same requests); limits.cpu, limits.memory, limits.ephemeral-storage;
//     requests.hugepages-<size>; requests.<name> of an extended resource
//     (requests.nvidia.com/gpu). The pod's requests and limits are those
//     of k8s.io/component-helpers/resource PodRequests and PodLimits: the
//     containers' sum and the restartable init containers (sidecars),
//     at least each other init container with the sidecars started before
//     it, plus the pod's overhead; the pod-level resources when set. A pod
//     that has ended (Succeeded, Failed) counts nothing;
//   - a PersistentVolumeClaim: persistent_volume_claims.go:
//     persistentvolumeclaims, count/persistentvolumeclaims,
//     requests.storage and, for its storage class,
//     <class>.storageclass.storage.k8s.io/requests.storage and
//     …/persistentvolumeclaims;
//   - a Service: services.go: services, count/services,
//     services.loadbalancers, services.nodeports (one per node port);
//   - any other object: count/<resource>.<group> (count/<resource> in the
//     core group), and the legacy names configmaps, secrets,
//     resourcequotas, replicationcontrollers (the generic object count
//     evaluator, k8s.io/apiserver pkg/quota/v1/generic).

// podUsage is what the pod evaluator counts for p.
func podUsage(p *corev1.Pod) corev1.ResourceList {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return corev1.ResourceList{}
	}
	out := corev1.ResourceList{
		corev1.ResourcePods:               *resource.NewQuantity(1, resource.DecimalSI),
		corev1.ResourceName("count/pods"): *resource.NewQuantity(1, resource.DecimalSI),
	}
	requests, limits := podResources(&p.Spec)
	for name, q := range requests {
		switch {
		case name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage:
			out[corev1.ResourceName("requests."+string(name))] = q.DeepCopy()
			out[name] = q.DeepCopy()
		case strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) || extended(name):
			out[corev1.ResourceName("requests."+string(name))] = q.DeepCopy()
		}
	}
	for name, q := range limits {
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage {
			out[corev1.ResourceName("limits."+string(name))] = q.DeepCopy()
		}
	}
	return out
}

// extended reports an extended resource (a name with a domain outside
// kubernetes.io, v1helper.IsExtendedResourceName).
func extended(name corev1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.HasPrefix(s, "requests.") {
		return false
	}
	domain, _, _ := strings.Cut(s, "/")
	return domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io")
}

// podResources is the pod's requests and limits as PodRequests and
// PodLimits add them up.
func podResources(spec *corev1.PodSpec) (requests, limits corev1.ResourceList) {
	sum := func(get func(corev1.ResourceRequirements) corev1.ResourceList) corev1.ResourceList {
		total := corev1.ResourceList{}
		for _, c := range spec.Containers {
			add(total, get(c.Resources))
		}
		sidecars := corev1.ResourceList{}
		for _, c := range spec.InitContainers {
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				add(total, get(c.Resources))
				add(sidecars, get(c.Resources))
				continue
			}
			alone := corev1.ResourceList{}
			add(alone, sidecars)
			add(alone, get(c.Resources))
			for name, q := range alone {
				if cur, ok := total[name]; !ok || q.Cmp(cur) > 0 {
					total[name] = q.DeepCopy()
				}
			}
		}
		add(total, spec.Overhead)
		return total
	}
	requests = sum(func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Requests })
	limits = sum(func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Limits })
	if spec.Resources != nil {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := spec.Resources.Requests[name]; ok {
				requests[name] = q.DeepCopy()
			}
			if q, ok := spec.Resources.Limits[name]; ok {
				limits[name] = q.DeepCopy()
			}
		}
	}
	return requests, limits
}

// pvcUsage is what the claim evaluator counts for c.
func pvcUsage(c *corev1.PersistentVolumeClaim) corev1.ResourceList {
	one := *resource.NewQuantity(1, resource.DecimalSI)
	out := corev1.ResourceList{
		corev1.ResourcePersistentVolumeClaims:               one.DeepCopy(),
		corev1.ResourceName("count/persistentvolumeclaims"): one.DeepCopy(),
	}
	storage, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]
	if ok {
		out[corev1.ResourceRequestsStorage] = storage.DeepCopy()
	}
	if class := c.Spec.StorageClassName; class != nil && *class != "" {
		prefix := *class + ".storageclass.storage.k8s.io/"
		out[corev1.ResourceName(prefix+"persistentvolumeclaims")] = one.DeepCopy()
		if ok {
			out[corev1.ResourceName(prefix+"requests.storage")] = storage.DeepCopy()
		}
	}
	return out
}

// serviceUsage is what the service evaluator counts for s.
func serviceUsage(s *corev1.Service) corev1.ResourceList {
	one := *resource.NewQuantity(1, resource.DecimalSI)
	out := corev1.ResourceList{corev1.ResourceServices: one.DeepCopy(), corev1.ResourceName("count/services"): one.DeepCopy()}
	switch s.Spec.Type {
	case corev1.ServiceTypeLoadBalancer:
		out[corev1.ResourceServicesLoadBalancers] = one.DeepCopy()
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(int64(len(s.Spec.Ports)), resource.DecimalSI)
	case corev1.ServiceTypeNodePort:
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(int64(len(s.Spec.Ports)), resource.DecimalSI)
	}
	return out
}

// countName is the object count quota name of a resource of group.
func countName(resourceName, group string) corev1.ResourceName {
	if group == "" {
		return corev1.ResourceName("count/" + resourceName)
	}
	return corev1.ResourceName("count/" + resourceName + "." + group)
}

// legacyCounts are the object counts quotas name without count/.
var legacyCounts = map[string]corev1.ResourceName{
	"configmaps":             corev1.ResourceConfigMaps,
	"secrets":                corev1.ResourceSecrets,
	"resourcequotas":         corev1.ResourceQuotas,
	"replicationcontrollers": corev1.ResourceReplicationControllers,
}

func add(into, l corev1.ResourceList) {
	for name, q := range l {
		cur := into[name]
		cur.Add(q)
		into[name] = cur
	}
}

func subtract(from, l corev1.ResourceList) {
	for name, q := range l {
		if cur, ok := from[name]; ok {
			cur.Sub(q)
			from[name] = cur
		}
	}
}

// prettyPrint lists quantities as the quota admission plugin does:
// sorted "name=quantity" joined by commas.
func prettyPrint(l corev1.ResourceList) string {
	parts := make([]string, 0, len(l))
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range l {
			if !yield(string(n)) {
				return
			}
		}
	}) {
		q := l[corev1.ResourceName(name)]
		parts = append(parts, name+"="+q.String())
	}
	return strings.Join(parts, ",")
}

func mask(l corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range names {
		if q, ok := l[n]; ok {
			out[n] = q.DeepCopy()
		}
	}
	return out
}

// quotaMatches reports whether quota q applies to a pod (nil for any
// other object) by its scopes: Terminating, NotTerminating, BestEffort,
// NotBestEffort and PriorityClass (pods.go, podMatchesScopeFunc). A quota
// with another scope matches nothing here.
func quotaMatches(q *corev1.ResourceQuota, p *corev1.Pod) bool {
	var selectors []corev1.ScopedResourceSelectorRequirement
	for _, s := range q.Spec.Scopes {
		selectors = append(selectors, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		selectors = append(selectors, q.Spec.ScopeSelector.MatchExpressions...)
	}
	if len(selectors) == 0 {
		return true
	}
	if p == nil {
		return false // scoped quotas track pods only
	}
	for _, s := range selectors {
		if !scopeMatches(s, p) {
			return false
		}
	}
	return true
}

func scopeMatches(s corev1.ScopedResourceSelectorRequirement, p *corev1.Pod) bool {
	var in bool
	switch s.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		in = p.Spec.ActiveDeadlineSeconds != nil && *p.Spec.ActiveDeadlineSeconds >= 0
	case corev1.ResourceQuotaScopeNotTerminating:
		in = p.Spec.ActiveDeadlineSeconds == nil || *p.Spec.ActiveDeadlineSeconds < 0
	case corev1.ResourceQuotaScopeBestEffort:
		in = bestEffort(p)
	case corev1.ResourceQuotaScopeNotBestEffort:
		in = !bestEffort(p)
	case corev1.ResourceQuotaScopePriorityClass:
		switch values := sets.New(s.Values...); s.Operator {
		case corev1.ScopeSelectorOpIn:
			return values.Has(p.Spec.PriorityClassName)
		case corev1.ScopeSelectorOpNotIn:
			return !values.Has(p.Spec.PriorityClassName)
		case corev1.ScopeSelectorOpExists:
			return p.Spec.PriorityClassName != ""
		case corev1.ScopeSelectorOpDoesNotExist:
			return p.Spec.PriorityClassName == ""
		}
		return false
	default:
		return false
	}
	if s.Operator == corev1.ScopeSelectorOpDoesNotExist {
		return !in
	}
	return in
}

// bestEffort is a pod with no request nor limit of cpu or memory in any
// container (the QoS class BestEffort).
func bestEffort(p *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for _, c := range cs {
			for _, l := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				if _, ok := l[corev1.ResourceCPU]; ok {
					return false
				}
				if _, ok := l[corev1.ResourceMemory]; ok {
					return false
				}
			}
		}
	}
	return true
}

// quotaValidation is the set the pod evaluator requires of every container
// when a quota tracks one of them (pods.go, Constraints): a request or
// limit of cpu or memory.
var quotaValidation = sets.New[corev1.ResourceName](
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory)

// podConstraints is the pod evaluator's Constraints: "must specify
// limits.cpu for: main; requests.memory for: main,sidecar", or nil.
func podConstraints(hard corev1.ResourceList, p *corev1.Pod) error {
	required := sets.New[corev1.ResourceName]()
	for name := range hard {
		if quotaValidation.Has(name) {
			required.Insert(name)
		}
	}
	if required.Len() == 0 || p.Spec.Resources != nil {
		return nil
	}
	missing := map[corev1.ResourceName]sets.Set[string]{}
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for _, c := range cs {
			has := sets.New[corev1.ResourceName]()
			for name := range c.Resources.Requests {
				has.Insert(name, corev1.ResourceName("requests."+string(name)))
			}
			for name := range c.Resources.Limits {
				has.Insert(corev1.ResourceName("limits." + string(name)))
			}
			for _, name := range sets.List(required.Difference(has)) {
				if missing[name] == nil {
					missing[name] = sets.New[string]()
				}
				missing[name].Insert(c.Name)
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var msgs []string
	for _, name := range slices.Sorted(func(yield func(corev1.ResourceName) bool) {
		for n := range missing {
			if !yield(n) {
				return
			}
		}
	}) {
		msgs = append(msgs, fmt.Sprintf("%s for: %s", name, strings.Join(sets.List(missing[name]), ",")))
	}
	return fmt.Errorf("must specify %s", strings.Join(msgs, "; "))
}

func one() resource.Quantity  { return *resource.NewQuantity(1, resource.DecimalSI) }
func zero() resource.Quantity { return *resource.NewQuantity(0, resource.DecimalSI) }

func resourceQuantity(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }
