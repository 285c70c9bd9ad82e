package cubetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/cubestudio/cube"
)

// admission is what cubetest plays of the API server's admission chain
// and of the controllers that create pods, in the order the API server
// runs its plugins (k8s v1.37.2, pkg/kubeapiserver/options/plugins.go):
// NamespaceLifecycle, LimitRanger, PodSecurity, ResourceQuota. It sits
// between the cube client (and Cluster.Fake) and controller-runtime's fake
// client, which admits everything.
type admission struct {
	scheme *runtime.Scheme
	mapper meta.RESTMapper
	inner  client.WithWatch

	// mu makes a check and the write it admits one step, as the quota
	// admission's serialized updates of a quota's usage do.
	mu sync.Mutex
	// workloads holds the pods each workload's controller would have
	// created (their usage) and, when the API server refused one, its
	// answer.
	workloads map[objectKey]*workloadPods
	// standIns are the pods AddPod made for a release: stand-ins for
	// pods its workloads already count.
	standIns map[objectKey]bool

	reactions reactions
}

type objectKey struct {
	gk              schema.GroupKind
	namespace, name string
}

func keyOf(u *unstructured.Unstructured) objectKey {
	return objectKey{u.GroupVersionKind().GroupKind(), u.GetNamespace(), u.GetName()}
}

func keyOfRef(ref cube.ObjectRef) objectKey {
	return objectKey{ref.GroupKind(), ref.Namespace, ref.Name}
}

// workloadPods is what a workload's controller made of its pods.
type workloadPods struct {
	usage corev1.ResourceList
	// refused is the API server's answer to the first pod it refused.
	refused string
	// ended: the workload ran to completion, its pods count nothing.
	ended bool
}

func newAdmission(s *runtime.Scheme, m meta.RESTMapper, inner client.WithWatch) *admission {
	return &admission{scheme: s, mapper: m, inner: inner, workloads: map[objectKey]*workloadPods{}, standIns: map[objectKey]bool{}}
}

// wrap returns inner behind the admission.
func (a *admission) wrap() client.WithWatch {
	return interceptor.NewClient(a.inner, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			u, err := a.toUnstructured(obj)
			if err != nil {
				return c.Create(ctx, obj, opts...)
			}
			co := &client.CreateOptions{}
			co.ApplyOptions(opts)
			return a.write(ctx, u, len(co.DryRun) > 0, func(mutated *unstructured.Unstructured) error {
				if mutated != nil && mutated.GetKind() == "Pod" {
					// LimitRanger's defaults reach the caller's object.
					if uo, ok := obj.(*unstructured.Unstructured); ok {
						uo.Object = mutated.Object
					} else if err := runtime.DefaultUnstructuredConverter.FromUnstructured(mutated.Object, obj); err != nil {
						return err
					}
				}
				return c.Create(ctx, obj, opts...)
			})
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			raw, err := json.Marshal(obj)
			if err != nil {
				return c.Apply(ctx, obj, opts...)
			}
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(raw); err != nil {
				return c.Apply(ctx, obj, opts...)
			}
			ao := &client.ApplyOptions{}
			ao.ApplyOptions(opts)
			return a.write(ctx, u, len(ao.DryRun) > 0, func(mutated *unstructured.Unstructured) error {
				if mutated != nil && !equalJSON(mutated, u) {
					return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(mutated), opts...)
				}
				return c.Apply(ctx, obj, opts...)
			})
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			err := c.Delete(ctx, obj, opts...)
			if err == nil {
				if gvk, gerr := apiutil.GVKForObject(obj, a.scheme); gerr == nil {
					a.mu.Lock()
					k := objectKey{gvk.GroupKind(), obj.GetNamespace(), obj.GetName()}
					delete(a.workloads, k)
					delete(a.standIns, k)
					a.mu.Unlock()
				}
			}
			return err
		},
	})
}

func equalJSON(a, b *unstructured.Unstructured) bool {
	x, _ := json.Marshal(a.Object)
	y, _ := json.Marshal(b.Object)
	return string(x) == string(y)
}

func (a *admission) toUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.DeepCopy(), nil
	}
	gvk, err := apiutil.GVKForObject(obj, a.scheme)
	if err != nil {
		return nil, err
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// write admits the create or apply of u and runs do with the object the
// admission chain mutated (LimitRange defaults on a Pod). Only a create
// is admitted: an apply of an object that exists changes what it asks
// for, and the controllers redo its pods. After the write, a workload's
// controller makes its pods (or records why it cannot), and the
// reactions registered for it are scheduled.
func (a *admission) write(ctx context.Context, u *unstructured.Unstructured, dryRun bool, do func(*unstructured.Unstructured) error) error {
	gvk := u.GroupVersionKind()
	mapping, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return do(nil) // a kind the fake does not know: it answers
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	a.mu.Lock()
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(gvk)
	exists := u.GetName() != "" && a.inner.Get(ctx, client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}, existing) == nil
	if !exists && namespaced && u.GetNamespace() != "" {
		if err := a.admitCreate(ctx, u, mapping); err != nil {
			a.mu.Unlock()
			return err
		}
	}
	err = do(u)
	a.mu.Unlock()
	if err != nil || dryRun || !namespaced {
		return err
	}
	if createsPods(gvk.GroupKind()) {
		stored := &unstructured.Unstructured{}
		stored.SetGroupVersionKind(gvk)
		if gerr := a.inner.Get(ctx, client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}, stored); gerr == nil {
			if perr := a.makePods(ctx, stored); perr != nil {
				return fmt.Errorf("cubetest: the controller of %s %s/%s: %w", gvk.Kind, u.GetNamespace(), u.GetName(), perr)
			}
		}
	}
	if !exists {
		a.reactions.created(ctx, u)
	}
	return nil
}

// admitCreate is the admission of a create of u: the namespace must exist
// (NamespaceLifecycle: `namespaces "x" not found`); a Pod takes the
// LimitRange defaults and bounds and the namespace's Pod Security level;
// then every quota of the namespace must still hold.
func (a *admission) admitCreate(ctx context.Context, u *unstructured.Unstructured, mapping *meta.RESTMapping) error {
	ns := &corev1.Namespace{}
	if err := a.inner.Get(ctx, client.ObjectKey{Name: u.GetNamespace()}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, u.GetNamespace())
		}
		return err
	}
	gr := mapping.Resource.GroupResource()
	var p *corev1.Pod
	if mapping.GroupVersionKind.GroupKind() == (schema.GroupKind{Kind: "Pod"}) {
		p = &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		if err := a.admitPod(ctx, ns, p); err != nil {
			return err
		}
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			return err
		}
		u.Object["spec"] = content["spec"]
	}
	usage, err := objectUsage(u, gr)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if msg, err := a.checkQuotas(ctx, u.GetNamespace(), p, usage); err != nil {
		return err
	} else if msg != "" {
		return apierrors.NewForbidden(gr, u.GetName(), errors.New(msg))
	}
	return nil
}

// admitPod applies the LimitRanges and the Pod Security level of ns to
// p, as a pod create meets them: the refusal is the API server's
// Forbidden error.
func (a *admission) admitPod(ctx context.Context, ns *corev1.Namespace, p *corev1.Pod) error {
	gr := schema.GroupResource{Resource: "pods"}
	if refusal, err := a.limitRanges(ctx, ns.Name, p); err != nil {
		return err
	} else if refusal != "" {
		return apierrors.NewForbidden(gr, p.Name, errors.New(refusal))
	}
	if msg := podSecurity(ns, p); msg != "" {
		return apierrors.NewForbidden(gr, p.Name, errors.New(msg))
	}
	return nil
}

// podSecurity is PodSecurity admission's refusal of p in ns, or "": the
// checks are cube.CheckPodSecurity's (k8s.io/pod-security-admission's
// policy at the level of the namespace's enforce labels), the message the
// admission's (admission/admission.go, "violates PodSecurity %q: %s").
func podSecurity(ns *corev1.Namespace, p *corev1.Pod) string {
	probe := p.DeepCopy()
	probe.TypeMeta.APIVersion, probe.TypeMeta.Kind = "v1", "Pod"
	if probe.Name == "" {
		probe.Name = "pod"
	}
	if probe.Labels == nil {
		probe.Labels = map[string]string{}
	}
	probe.Labels[cube.LabelRelease] = "cubetest" // CheckPodSecurity reads workloads, which are labelled
	err := cube.CheckPodSecurity(ns.Name, ns.Labels, cube.WorkloadFunc(func() ([]client.Object, error) {
		return []client.Object{probe}, nil
	}))
	var ps *cube.PodSecurityError
	if !errors.As(err, &ps) || len(ps.Violations) == 0 {
		return ""
	}
	return fmt.Sprintf("violates PodSecurity %q: %s", ps.Level, ps.Violations[0].Reasons)
}

// objectUsage is what the quota evaluators count for u.
func objectUsage(u *unstructured.Unstructured, gr schema.GroupResource) (corev1.ResourceList, error) {
	var usage corev1.ResourceList
	switch gr {
	case schema.GroupResource{Resource: "pods"}:
		p := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			return nil, err
		}
		return podUsage(p), nil
	case schema.GroupResource{Resource: "persistentvolumeclaims"}:
		c := &corev1.PersistentVolumeClaim{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, c); err != nil {
			return nil, err
		}
		return pvcUsage(c), nil
	case schema.GroupResource{Resource: "services"}:
		s := &corev1.Service{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
			return nil, err
		}
		usage = serviceUsage(s)
	default:
		usage = corev1.ResourceList{}
		if legacy, ok := legacyCounts[gr.Resource]; ok && gr.Group == "" {
			usage[legacy] = one()
		}
	}
	usage[countName(gr.Resource, gr.Group)] = one()
	return usage, nil
}

// checkQuotas is the quota admission of an object of usage (p when it is
// a pod) in namespace: the message of the first quota it would exceed
// ("exceeded quota: …", or the pod evaluator's "failed quota: …"), or "".
// A quota is counted here and now from what the namespace holds (the
// stored objects and the pods the workloads' controllers made), as the
// quota controller keeps it: the API server's "status unknown for quota"
// while the controller has not counted a new quota does not happen.
// (k8s.io/apiserver v0.37.2 pkg/admission/plugin/resourcequota/controller.go,
// checkRequest.)
func (a *admission) checkQuotas(ctx context.Context, namespace string, p *corev1.Pod, usage corev1.ResourceList) (string, error) {
	var quotas corev1.ResourceQuotaList
	if err := a.inner.List(ctx, &quotas, client.InNamespace(namespace)); err != nil {
		return "", err
	}
	if len(quotas.Items) == 0 {
		return "", nil
	}
	slices.SortFunc(quotas.Items, func(x, y corev1.ResourceQuota) int { return strings.Compare(x.Name, y.Name) })
	for i := range quotas.Items {
		q := &quotas.Items[i]
		if !quotaMatches(q, p) {
			continue
		}
		if p != nil {
			if err := podConstraints(q.Spec.Hard, p); err != nil {
				return fmt.Sprintf("failed quota: %s: %v", q.Name, err), nil
			}
		}
		tracked := make([]corev1.ResourceName, 0, len(q.Spec.Hard))
		for name := range q.Spec.Hard {
			tracked = append(tracked, name)
		}
		requested := mask(usage, tracked)
		for name, v := range requested {
			if v.IsZero() {
				delete(requested, name)
			}
		}
		if len(requested) == 0 {
			continue
		}
		used, err := a.used(ctx, q)
		if err != nil {
			return "", err
		}
		var exceeded []corev1.ResourceName
		for name, v := range requested {
			total := used[name]
			total = total.DeepCopy()
			total.Add(v)
			if total.Cmp(q.Spec.Hard[name]) > 0 {
				exceeded = append(exceeded, name)
			}
		}
		if len(exceeded) > 0 {
			usedMasked := mask(used, exceeded)
			for _, name := range exceeded {
				if _, ok := usedMasked[name]; !ok {
					usedMasked[name] = zero()
				}
			}
			return fmt.Sprintf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
				q.Name, prettyPrint(mask(requested, exceeded)), prettyPrint(usedMasked), prettyPrint(mask(q.Spec.Hard, exceeded))), nil
		}
	}
	return "", nil
}

// used counts what the namespace of q uses of each resource q tracks:
// its pods (but AddPod's stand-ins), claims, services and the objects it
// counts, and the pods its workloads' controllers made.
func (a *admission) used(ctx context.Context, q *corev1.ResourceQuota) (corev1.ResourceList, error) {
	total := corev1.ResourceList{}
	var pods corev1.PodList
	if err := a.inner.List(ctx, &pods, client.InNamespace(q.Namespace)); err != nil {
		return nil, err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if a.standIns[objectKey{schema.GroupKind{Kind: "Pod"}, p.Namespace, p.Name}] || !quotaMatches(q, p) {
			continue
		}
		add(total, podUsage(p))
	}
	for k, w := range a.workloads {
		if k.namespace == q.Namespace && !w.ended {
			add(total, w.usage)
		}
	}
	if quotaMatches(q, nil) {
		var claims corev1.PersistentVolumeClaimList
		if err := a.inner.List(ctx, &claims, client.InNamespace(q.Namespace)); err != nil {
			return nil, err
		}
		for i := range claims.Items {
			add(total, pvcUsage(&claims.Items[i]))
		}
		var services corev1.ServiceList
		if err := a.inner.List(ctx, &services, client.InNamespace(q.Namespace)); err != nil {
			return nil, err
		}
		for i := range services.Items {
			add(total, serviceUsage(&services.Items[i]))
		}
		for name := range q.Spec.Hard {
			n, err := a.count(ctx, q.Namespace, name)
			if err != nil {
				return nil, err
			}
			if n >= 0 {
				total[name] = *resourceQuantity(n)
			}
		}
	}
	return total, nil
}

// count is how many objects of the resource an object count quota name
// (count/<resource>[.<group>] or a legacy name) names, or -1 for a name
// that is not such a count (or one counted above).
func (a *admission) count(ctx context.Context, namespace string, name corev1.ResourceName) (int64, error) {
	var gr schema.GroupResource
	switch s := string(name); {
	case strings.HasPrefix(s, "count/"):
		res, group, _ := strings.Cut(strings.TrimPrefix(s, "count/"), ".")
		gr = schema.GroupResource{Group: group, Resource: res}
	default:
		for res, legacy := range legacyCounts {
			if legacy == name {
				gr = schema.GroupResource{Resource: res}
			}
		}
	}
	switch gr.Resource {
	case "", "pods", "persistentvolumeclaims", "services":
		return -1, nil
	}
	gvk, err := a.mapper.KindFor(gr.WithVersion(""))
	if err != nil {
		return -1, nil // a kind this cluster does not serve: none exist
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := a.inner.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return 0, nil
	}
	return int64(len(list.Items)), nil
}

// limitRanges applies the namespace's LimitRanges of type Container to
// the containers of p, as the LimitRanger admission plugin does
// (k8s v1.37.2 plugin/pkg/admission/limitranger/admission.go): the
// requests default to the limits the container states (the API's
// defaulting), then defaultRequest and default fill what is missing;
// then min and max bound each container. The refusal lists every bound
// broken, as the plugin aggregates them.
func (a *admission) limitRanges(ctx context.Context, namespace string, p *corev1.Pod) (refusal string, err error) {
	var ranges corev1.LimitRangeList
	if err := a.inner.List(ctx, &ranges, client.InNamespace(namespace)); err != nil {
		return "", err
	}
	slices.SortFunc(ranges.Items, func(x, y corev1.LimitRange) int { return strings.Compare(x.Name, y.Name) })
	var errs []error
	for _, cs := range []*[]corev1.Container{&p.Spec.InitContainers, &p.Spec.Containers} {
		for i := range *cs {
			c := &(*cs)[i]
			for name, q := range c.Resources.Limits {
				if _, ok := c.Resources.Requests[name]; !ok {
					if c.Resources.Requests == nil {
						c.Resources.Requests = corev1.ResourceList{}
					}
					c.Resources.Requests[name] = q.DeepCopy()
				}
			}
		}
	}
	for i := range ranges.Items {
		for j := range ranges.Items[i].Spec.Limits {
			storedDefaults(&ranges.Items[i].Spec.Limits[j])
		}
	}
	for _, lr := range ranges.Items {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			for _, cs := range []*[]corev1.Container{&p.Spec.InitContainers, &p.Spec.Containers} {
				for i := range *cs {
					c := &(*cs)[i]
					fill(&c.Resources.Requests, item.DefaultRequest)
					fill(&c.Resources.Limits, item.Default)
				}
			}
		}
	}
	for _, lr := range ranges.Items {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
				for _, c := range cs {
					for _, name := range sortedNames(item.Min) {
						if err := minConstraint(string(corev1.LimitTypeContainer), string(name), item.Min[name], c.Resources.Requests, c.Resources.Limits); err != nil {
							errs = append(errs, err)
						}
					}
					for _, name := range sortedNames(item.Max) {
						if err := maxConstraint(string(corev1.LimitTypeContainer), string(name), item.Max[name], c.Resources.Requests, c.Resources.Limits); err != nil {
							errs = append(errs, err)
						}
					}
				}
			}
		}
	}
	if len(errs) == 0 {
		return "", nil
	}
	return utilerrors.NewAggregate(errs).Error(), nil
}

// storedDefaults are the defaults the API server stores in a LimitRange
// of type Container (pkg/apis/core/v1/defaults.go,
// SetDefaults_LimitRangeItem): the default limit is the max, the default
// request the default limit, else the min. A LimitRange given to
// NewCluster did not go through the API server.
func storedDefaults(item *corev1.LimitRangeItem) {
	if item.Type != corev1.LimitTypeContainer {
		return
	}
	fill(&item.Default, item.Max)
	fill(&item.DefaultRequest, item.Default)
	fill(&item.DefaultRequest, item.Min)
}

func fill(into *corev1.ResourceList, defaults corev1.ResourceList) {
	for name, q := range defaults {
		if _, ok := (*into)[name]; ok {
			continue
		}
		if *into == nil {
			*into = corev1.ResourceList{}
		}
		(*into)[name] = q.DeepCopy()
	}
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// minConstraint and maxConstraint say what LimitRanger says of a
// container below a min or above a max (limitranger/admission.go).
func minConstraint(limitType, name string, enforced resource.Quantity, request, limit corev1.ResourceList) error {
	req, reqOK := request[corev1.ResourceName(name)]
	lim, limOK := limit[corev1.ResourceName(name)]
	if !reqOK {
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, limitType, enforced.String())
	}
	if req.Cmp(enforced) < 0 {
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	}
	if limOK && lim.Cmp(enforced) < 0 {
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, limitType, enforced.String(), lim.String())
	}
	return nil
}

func maxConstraint(limitType, name string, enforced resource.Quantity, request, limit corev1.ResourceList) error {
	req, reqOK := request[corev1.ResourceName(name)]
	lim, limOK := limit[corev1.ResourceName(name)]
	if !limOK {
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, limitType, enforced.String())
	}
	if lim.Cmp(enforced) > 0 {
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, limitType, enforced.String(), lim.String())
	}
	if reqOK && req.Cmp(enforced) > 0 {
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	}
	return nil
}
