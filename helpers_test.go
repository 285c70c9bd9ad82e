package cube_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
)

// webApp is a small release built by hand: a ConfigMap, a Deployment and a
// Service, deliberately listed workload-first to exercise apply ordering.
func webApp(name, ns string, replicas int32) cube.Workload {
	id := cube.Identity{Kind: "web", Release: name, PartOf: "shop"}
	return cube.WorkloadFunc(func() ([]client.Object, error) {
		return []client.Object{
			&appsv1.Deployment{
				TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
				ObjectMeta: id.ObjectMeta(name, ns, nil, nil),
				Spec: appsv1.DeploymentSpec{
					Replicas: &replicas,
					Selector: &metav1.LabelSelector{MatchLabels: id.Selector("")},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: id.Labels()},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{
							Name: "web", Image: "nginx:1.27",
							Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
							EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name + "-config"}}}},
						}}},
					},
				},
			},
			&corev1.Service{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
				ObjectMeta: id.ObjectMeta(name, ns, nil, nil),
				Spec: corev1.ServiceSpec{
					Selector: id.Selector(""),
					Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}},
				},
			},
			&corev1.ConfigMap{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: id.ObjectMeta(name+"-config", ns, nil, nil),
				Data:       map[string]string{"MODE": "prod"},
			},
		}, nil
	})
}

// deployments returns a release of n Deployments.
func deployments(release, ns string, n int) []client.Object {
	id := cube.Identity{Kind: "bench", Release: release}
	out := make([]client.Object, n)
	one := int32(1)
	for i := range n {
		out[i] = &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: id.ObjectMeta(fmt.Sprintf("%s-%d", release, i), ns, nil, nil),
			Spec: appsv1.DeploymentSpec{
				Replicas: &one,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("%s-%d", release, i)}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": fmt.Sprintf("%s-%d", release, i)}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name: "app", Image: "nginx:1.27",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resourceMust("100m")}},
					}}},
				},
			},
		}
	}
	return out
}
