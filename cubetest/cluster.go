package cubetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/kinds"
)

// experimentGVK is Katib's Experiment, known to the fake cluster without
// importing Katib's Go module.
var experimentGVK = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1beta1", Kind: "Experiment"}

// Scheme returns a fresh scheme with every kind cube builds: client-go's
// built-in kinds, the training-operator jobs, Volcano, Argo Workflows,
// LeaderWorkerSet, KubeRay and the Gateway API.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		kubeflowv1.AddToScheme,
		vcbatch.AddToScheme,
		vcscheduling.AddToScheme,
		wfv1.AddToScheme,
		lwsv1.AddToScheme,
		rayv1.AddToScheme,
		gatewayv1.Install,
	} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("cubetest: build scheme: %v", err)) // programmer error: upstream schemes conflict
		}
	}
	return s
}

// clusterScoped lists the cluster-scoped kinds of the scheme.
var clusterScoped = map[schema.GroupKind]bool{
	{Kind: "Namespace"}:        true,
	{Kind: "Node"}:             true,
	{Kind: "PersistentVolume"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:  true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                   true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:               true,
	{Group: "scheduling.volcano.sh", Kind: "Queue"}:                   true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: true,
	{Group: "gateway.networking.k8s.io", Kind: "GatewayClass"}:        true,
}

func restMapper(s *runtime.Scheme) meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for gvk := range s.AllKnownTypes() {
		if strings.HasSuffix(gvk.Kind, "List") || strings.HasSuffix(gvk.Kind, "Options") {
			continue
		}
		scope := meta.RESTScopeNamespace
		if clusterScoped[gvk.GroupKind()] {
			scope = meta.RESTScopeRoot
		}
		m.Add(gvk, scope)
	}
	m.Add(experimentGVK, meta.RESTScopeNamespace)
	return m
}

// Cluster is an in-memory cluster for unit tests of code that uses cube: a
// cube.Client on controller-runtime's fake client (with server-side apply and
// watches) behind the API server's admission (namespaces, LimitRanges, Pod
// Security, ResourceQuotas, also for the pods the workloads' controllers
// create), and client-go's fake clientset for logs. No controller runs in
// it: reactions (React) and the Mark methods move a release's objects the
// way their controllers would.
type Cluster struct {
	// Client is the cube client under test.
	Client *cube.Client
	// Fake is the fake controller-runtime client the cube client uses.
	Fake client.WithWatch
	// Clientset serves pod logs ("fake logs" for every pod it holds).
	Clientset *k8sfake.Clientset

	admission *admission
}

// systemNamespaces are the namespaces the API server makes at start
// (k8s v1.37.2 pkg/controlplane/controller/systemnamespaces).
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// NewCluster returns an in-memory cluster holding objs, as stored (they
// skip admission). Its client reads every kind cube builds (kinds.All);
// options are passed to it after that (cube.Namespace and friends). The
// cluster has the namespaces the API server makes (default, kube-system,
// kube-public, kube-node-lease) and the client's namespace; objects go
// into any other only once it exists.
func NewCluster(objs []client.Object, opts ...cube.Option) *Cluster {
	s := Scheme()
	var withStatus []client.Object
	for gk := range writers {
		for gvk := range s.AllKnownTypes() {
			if gvk.GroupKind() != gk {
				continue
			}
			if o, err := s.New(gvk); err == nil {
				if co, ok := o.(client.Object); ok {
					withStatus = append(withStatus, co)
				}
			}
		}
	}
	exp := &unstructured.Unstructured{}
	exp.SetGroupVersionKind(experimentGVK)
	withStatus = append(withStatus, exp)
	mapper := restMapper(s)
	fc := fake.NewClientBuilder().
		WithScheme(s).
		WithRESTMapper(mapper).
		WithStatusSubresource(withStatus...).
		WithTypeConverters(typeConverters()...).
		WithObjects(objs...).
		Build()
	adm := newAdmission(s, mapper, fc)
	wrapped := adm.wrap()
	cs := k8sfake.NewClientset()
	c := cube.NewFromClient(wrapped, append([]cube.Option{cube.Clientset(cs), cube.Kinds(kinds.All()...)}, opts...)...)
	for _, ns := range append(slices.Clone(systemNamespaces), c.Namespace()) {
		if ns == "" || validation.IsDNS1123Label(ns) != nil {
			continue // a bad namespace: the client reports it
		}
		// The API server labels every namespace with its name
		// (kubernetes.io/metadata.name, pkg/apis/core/v1/defaults.go).
		err := fc.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
			Labels: map[string]string{corev1.LabelMetadataName: ns}}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			panic(fmt.Sprintf("cubetest: create namespace %s: %v", ns, err)) // the fake client refused an empty namespace
		}
	}
	cluster := &Cluster{Client: c, Fake: wrapped, Clientset: cs, admission: adm}
	adm.reactions.cluster = cluster
	return cluster
}

// WaitForRelease returns the release name in namespace once an Apply has
// recorded it and created every object it lists: the point at which a test
// that runs the code under test in another goroutine can play the
// controllers (Mark…). Apply records a release before it creates the
// objects, so the record alone is not enough. The cluster is in memory, so
// it checks every millisecond until ctx ends.
func (c *Cluster) WaitForRelease(ctx context.Context, namespace, name string) (*cube.Release, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		if rel, err := c.Client.Release(ctx, namespace, name); err == nil && c.allExist(ctx, rel) {
			return rel, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cubetest: wait for release %s/%s: %w", namespace, name, ctx.Err())
		case <-tick.C:
		}
	}
}

func (c *Cluster) allExist(ctx context.Context, rel *cube.Release) bool {
	for _, ref := range rel.Objects {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(ref.GroupVersionKind)
		if err := c.Fake.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u); err != nil {
			return false
		}
	}
	return true
}

// usable reports why c is not a cluster: nil, or not made by NewCluster.
func (c *Cluster) usable() error {
	if c == nil || c.Client == nil || c.Fake == nil {
		return errors.New("cubetest: cluster is nil or zero: make it with cubetest.NewCluster")
	}
	return nil
}

// AddPod creates a pod of rel, as the release's controller would, in the
// state a reason describes, as the scheduler and the kubelet report it:
//
//   - "": running and ready;
//   - "Unschedulable": pending, with PodScheduled false and message as the
//     scheduler's explanation;
//   - any other reason (ImagePullBackOff, CrashLoopBackOff,
//     CreateContainerConfigError…): its container waiting for that reason
//     with message.
//
// The pod carries the release's labels, so Release.Status and Wait report
// its problems (cube.PodProblem), and FailOnStuckPods reacts to them. It
// stands in for a pod the release's workloads already count against the
// namespace's quotas, so the quota admission does not count it again; its
// namespace must exist.
func (c *Cluster) AddPod(ctx context.Context, rel *cube.Release, name, reason, message string) error {
	if err := c.usable(); err != nil {
		return err
	}
	if rel == nil {
		return errors.New("cubetest: release is nil")
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("cubetest: add pod %q: not a pod name: %s", name, strings.Join(msgs, "; "))
	}
	p := &corev1.Pod{
		// Created now, as the API server stamps a pod it creates.
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rel.Namespace, CreationTimestamp: now(), Labels: map[string]string{
			cube.LabelRelease: rel.Name, cube.LabelManagedBy: cube.ManagedBy,
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "cubetest"}}},
	}
	if err := c.addPod(ctx, p); err != nil {
		return fmt.Errorf("cubetest: add pod %s/%s: %w", rel.Namespace, name, err)
	}
	switch reason {
	case "":
		pod(p, cube.Ready, "", "")
	case corev1.PodReasonUnschedulable:
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason, Message: message, LastTransitionTime: now(),
		}}}
	default:
		pod(p, cube.InProgress, "", "")
		p.Status.ContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: message}
	}
	if err := c.Fake.Status().Update(ctx, p); err != nil {
		return fmt.Errorf("cubetest: add pod %s/%s: %w", rel.Namespace, name, err)
	}
	return nil
}

// MarkReady moves every object of rel that has a controller to Ready
// (Deployments available, claims bound…; jobs succeed).
func (c *Cluster) MarkReady(ctx context.Context, rel *cube.Release) error {
	return c.Mark(ctx, rel, cube.Ready, "", "")
}

// MarkSucceeded moves run-to-completion objects of rel to Succeeded and the
// long-running ones to Ready.
func (c *Cluster) MarkSucceeded(ctx context.Context, rel *cube.Release) error {
	return c.Mark(ctx, rel, cube.Succeeded, "", "")
}

// MarkFailed moves every object of rel that has a controller to Failed with
// the given reason and message.
func (c *Cluster) MarkFailed(ctx context.Context, rel *cube.Release, reason, message string) error {
	return c.Mark(ctx, rel, cube.Failed, reason, message)
}

// Mark writes the status that each object's controller would write for
// phase, through the status subresource, as a controller does.
//
// Every object with a status must exist when Mark starts: marking a
// release that was not (fully) applied is an error. The objects are
// written one after the other, and the code under test, running in another
// goroutine, may react to the first ones before Mark reaches the others: a
// Wait that sees one object fail returns, and the automation may delete
// the release. An object deleted after Mark started is skipped, as a
// controller writes nothing to an object that is gone.
func (c *Cluster) Mark(ctx context.Context, rel *cube.Release, phase cube.Phase, reason, message string) error {
	if err := c.usable(); err != nil {
		return err
	}
	if rel == nil {
		return errors.New("cubetest: release is nil")
	}
	if err := checkPhase(phase); err != nil {
		return err
	}
	var refs []cube.ObjectRef
	for _, ref := range rel.Objects {
		if HasStatus(ref.GroupKind()) {
			refs = append(refs, ref)
		}
	}
	var errs []error
	for _, ref := range refs {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(ref.GroupVersionKind)
		if err := c.Fake.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u); err != nil {
			errs = append(errs, fmt.Errorf("cubetest: mark release %s/%s %s: get %s: %w", rel.Namespace, rel.Name, phase, ref, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if phase == cube.Ready || phase == cube.Succeeded {
		for _, ref := range refs {
			if err := c.refused(ref); err != nil {
				errs = append(errs, fmt.Errorf("cubetest: mark release %s/%s %s: %w", rel.Namespace, rel.Name, phase, err))
			}
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
	}
	for _, ref := range refs {
		err := c.markRef(ctx, ref, phase, reason, message, false)
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// refused is the error of making the object at ref run when the API
// server refused its pods.
func (c *Cluster) refused(ref cube.ObjectRef) error {
	if c.admission == nil {
		return nil
	}
	if answer := c.admission.refusal(keyOfRef(ref)); answer != "" {
		return fmt.Errorf("the API server refused the pods of %s (%s): a workload whose pods were refused cannot run", ref, answer)
	}
	return nil
}

// markRef is Mark and the reactions writing one object: a refused
// workload is not made Ready or Succeeded (an error for Mark, nothing for
// a reaction), and a job that ends no longer counts its pods against the
// quotas.
func (c *Cluster) markRef(ctx context.Context, ref cube.ObjectRef, phase cube.Phase, reason, message string, reaction bool) error {
	if phase == cube.Ready || phase == cube.Succeeded {
		if err := c.refused(ref); err != nil {
			if reaction {
				return nil
			}
			return err
		}
	}
	if err := MarkObject(ctx, c.Fake, ref, phase, reason, message); err != nil {
		return err
	}
	if c.admission != nil && phase != cube.InProgress && runsToCompletion(ref.GroupKind()) {
		c.admission.ended(keyOfRef(ref))
	}
	return nil
}

// addPod creates a pod AddPod stands in for a workload's controller with:
// in a namespace that exists, but not counted against the quotas a
// second time (the workload's pods are).
func (c *Cluster) addPod(ctx context.Context, p *corev1.Pod) error {
	a := c.admission
	if a == nil {
		return c.Fake.Create(ctx, p)
	}
	if err := a.inner.Get(ctx, client.ObjectKey{Name: p.Namespace}, &corev1.Namespace{}); err != nil {
		if apierrors.IsNotFound(err) {
			return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, p.Namespace)
		}
		return err
	}
	a.mu.Lock()
	a.standIns[objectKey{schema.GroupKind{Kind: "Pod"}, p.Namespace, p.Name}] = true
	a.mu.Unlock()
	return a.inner.Create(ctx, p)
}

// MarkObject writes the status of one object as its controller would, on
// any client: the fake one here, or a real API server in integration tests.
func MarkObject(ctx context.Context, c client.Client, ref cube.ObjectRef, phase cube.Phase, reason, message string) error {
	if c == nil {
		return errors.New("cubetest: client is nil")
	}
	if err := checkPhase(phase); err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ref.GroupVersionKind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u); err != nil {
		return fmt.Errorf("cubetest: get %s: %w", ref, err)
	}
	if err := SetStatus(u, phase, reason, message); err != nil {
		return err
	}
	err := c.Status().Update(ctx, u)
	if apierrors.IsNotFound(err) && gone(ctx, c, ref) == nil {
		// Kinds without a status subresource (Argo's Workflow) take their
		// status in a plain update, as their controllers write it.
		err = c.Update(ctx, u)
	}
	if err != nil {
		if gerr := gone(ctx, c, ref); gerr != nil {
			// Deleted since the Get (the fake client then answers a status
			// update of a Service with a failed create, not NotFound).
			return fmt.Errorf("cubetest: update status of %s: deleted meanwhile: %w", ref, gerr)
		}
		return fmt.Errorf("cubetest: update status of %s: %w", ref, err)
	}
	return nil
}

// gone returns the NotFound error of getting ref, or nil if it exists (or
// the Get failed otherwise).
func gone(ctx context.Context, c client.Client, ref cube.ObjectRef) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ref.GroupVersionKind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u); apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
