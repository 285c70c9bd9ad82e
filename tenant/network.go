package tenant

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
)

// IngressException admits traffic that a tenant's network isolation
// otherwise denies: from pods outside the namespace to some of the
// tenant's pods, on some ports. Each becomes a NetworkPolicy
// <tenant>-allow-<Name>.
type IngressException struct {
	// Name names the exception (a DNS-1123 label).
	Name string
	// FromNamespaces selects the namespaces the traffic comes from by
	// label; empty: every namespace.
	FromNamespaces map[string]string
	// FromPods selects the pods in those namespaces; empty: every pod.
	FromPods map[string]string
	// ToPods selects the tenant's pods it reaches; empty: every pod.
	ToPods map[string]string
	// Ports are the TCP ports it reaches; empty: every port.
	Ports []int32
}

func (e IngressException) clone() IngressException {
	e.FromNamespaces, e.FromPods, e.ToPods = maps.Clone(e.FromNamespaces), maps.Clone(e.FromPods), maps.Clone(e.ToPods)
	e.Ports = slices.Clone(e.Ports)
	return e
}

// KubeRay's operator and the Ray head's dashboard port it calls.
const (
	// LabelKubeRayOperator and KubeRayOperatorComponent select the KubeRay
	// operator's pods: ray-operator/config/manager/manager.yaml (v1.5.0)
	// labels them app.kubernetes.io/component=kuberay-operator, as the
	// Helm chart does.
	LabelKubeRayOperator     = "app.kubernetes.io/component"
	KubeRayOperatorComponent = "kuberay-operator"
	// RayDashboardPort is where the operator submits a RayJob's entrypoint
	// and reads a RayService's applications: both controllers call
	// utils.FetchHeadServiceURL with DashboardPortName
	// (controllers/ray/rayjob_controller.go, rayservice_controller.go,
	// KubeRay v1.5.0), whose default is utils.DefaultDashboardPort. The Ray
	// GCS (6379) is reached only by the cluster's own pods, inside the
	// namespace. A head started with another dashboard port needs its own
	// exception.
	RayDashboardPort = 8265
)

// KubeRayIngress lets the KubeRay operator, in any namespace, reach the
// dashboard of the tenant's Ray heads (pods labelled ray.io/node-type=head):
// without it a RayJob never starts and a RayService never becomes ready.
// Tenant includes it.
func KubeRayIngress() IngressException {
	return IngressException{
		Name:     "kuberay",
		FromPods: map[string]string{LabelKubeRayOperator: KubeRayOperatorComponent},
		ToPods:   map[string]string{"ray.io/node-type": "head"},
		Ports:    []int32{RayDashboardPort},
	}
}

// PrometheusIngress lets Prometheus servers, in any namespace (pods
// labelled app.kubernetes.io/name=prometheus, as prometheus-operator and
// kube-prometheus-stack label them), scrape every pod of the tenant on any
// port: the metrics autoscaling and accounting read. Tenant includes it.
func PrometheusIngress() IngressException {
	return IngressException{
		Name:     "prometheus",
		FromPods: map[string]string{"app.kubernetes.io/name": "prometheus"},
	}
}

// IngressControllerIngress lets the pods of an ingress controller or
// gateway in namespace reach every pod of the tenant, for notebooks and
// services published through it. Tenant does not include it.
func IngressControllerIngress(namespace string) IngressException {
	return IngressException{
		Name:           "ingress-" + namespace,
		FromNamespaces: map[string]string{corev1.LabelMetadataName: namespace},
	}
}

// networkPolicies are the isolation policy, which admits ingress from the
// namespace's own pods and the namespaces allowed explicitly and denies
// the rest, and one policy per exception.
func (t *Spec) networkPolicies(id cube.Identity) ([]client.Object, field.ErrorList) {
	var errs field.ErrorList
	peers := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}
	for i, ns := range t.allowFrom {
		for _, msg := range validation.IsDNS1123Label(ns) {
			errs = append(errs, field.Invalid(field.NewPath("networkPolicy", "spec", "ingress").Index(0).Child("from").Index(i+1), ns, msg))
		}
		peers = append(peers, networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
		}})
	}
	objs := []client.Object{&networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "NetworkPolicy"},
		ObjectMeta: id.ObjectMeta(t.name+"-isolation", t.name, nil, nil),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: peers}},
		},
	}}
	seen := map[string]bool{}
	for i, e := range t.exceptions {
		p := field.NewPath("ingressExceptions").Index(i)
		name := t.name + "-allow-" + e.Name
		for _, msg := range validation.IsDNS1123Label(e.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), e.Name, msg))
		}
		if seen[e.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), e.Name))
		}
		seen[e.Name] = true
		for _, sel := range []struct {
			field  string
			labels map[string]string
		}{{"fromNamespaces", e.FromNamespaces}, {"fromPods", e.FromPods}, {"toPods", e.ToPods}} {
			errs = append(errs, validateSelector(sel.labels, p.Child(sel.field))...)
		}
		var ports []networkingv1.NetworkPolicyPort
		for j, port := range e.Ports {
			for _, msg := range validation.IsValidPortNum(int(port)) {
				errs = append(errs, field.Invalid(p.Child("ports").Index(j), port, msg))
			}
			tcp := corev1.ProtocolTCP
			ports = append(ports, networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: ptrTo(intstr.FromInt32(port))})
		}
		objs = append(objs, &networkingv1.NetworkPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "NetworkPolicy"},
			ObjectMeta: id.ObjectMeta(name, t.name, nil, nil),
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: maps.Clone(e.ToPods)},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					From: []networkingv1.NetworkPolicyPeer{{
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: maps.Clone(e.FromNamespaces)},
						PodSelector:       podSelector(e.FromPods),
					}},
					Ports: ports,
				}},
			},
		})
	}
	return objs, errs
}

// podSelector selects pods by labels, or leaves every pod (nil) when
// there are none.
func podSelector(labels map[string]string) *metav1.LabelSelector {
	if len(labels) == 0 {
		return nil
	}
	return &metav1.LabelSelector{MatchLabels: maps.Clone(labels)}
}

func validateSelector(labels map[string]string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(p.Key(k), k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(labels[k]) {
			errs = append(errs, field.Invalid(p.Key(k), labels[k], msg))
		}
	}
	return errs
}

func ptrTo[T any](v T) *T { return &v }
