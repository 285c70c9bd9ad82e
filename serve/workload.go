package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math"

	"github.com/cubestudio/cube/internal/podspec"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// objects builds the Kubernetes objects from the rendering.
func (s *Service) objects(r *rendering) ([]client.Object, field.ErrorList) {
	var objs []client.Object
	var errs field.ErrorList
	if len(r.files) > 0 {
		objs = append(objs, s.configMap(r))
	}
	target := autoscaleTarget{apiVersion: "apps/v1", kind: "Deployment"}
	if r.nodes > 1 {
		lws, lwsErrs := s.leaderWorkerSet(r)
		errs = append(errs, lwsErrs...)
		objs = append(objs, lws)
		target = autoscaleTarget{apiVersion: lwsAPIVersion, kind: "LeaderWorkerSet"}
	} else {
		dep, depErrs := s.deployment(r)
		errs = append(errs, depErrs...)
		objs = append(objs, dep)
	}
	objs = append(objs, s.service(r))
	// The DRA claim of the serving pods, when the profile's flavour is a
	// DRA driver: a template (a claim per pod) or, with SharedClaim, one
	// claim the whole group shares.
	if tmpl, claim := podspec.Of(&s.Handle).Claims(); tmpl != nil {
		objs = append(objs, tmpl)
	} else if claim != nil {
		objs = append(objs, claim)
	}
	if pdb := s.disruptionBudget(); pdb != nil {
		objs = append(objs, pdb)
	}
	if s.autoscale != nil {
		hpa, hpaErrs := s.horizontalPodAutoscaler(r, target, objs)
		errs = append(errs, hpaErrs...)
		if hpa != nil {
			objs = append(objs, hpa)
		}
	}
	return objs, errs
}

// selector selects the serving pods of the release.
func (s *Service) selector() map[string]string {
	return podspec.Of(&s.Handle).Identity().Selector(ComponentServer)
}

// replicaCount is the replica count rendered on the workload: nil when an
// autoscaler owns it.
func (s *Service) replicaCount() *int32 {
	if s.autoscale != nil {
		return nil
	}
	if s.replicas == nil {
		return ptr.To[int32](1)
	}
	return ptr.To(*s.replicas)
}

func (s *Service) startup() (timeoutSeconds int32) {
	d := s.startupTimeout
	if d == 0 {
		d = DefaultStartupTimeout
	}
	return int32(min(d.Seconds(), math.MaxInt32/2))
}

func (s *Service) deployment(r *rendering) (*appsv1.Deployment, field.ErrorList) {
	p := field.NewPath("spec", "template")
	tmpl, errs := s.podTemplate(r, p, roleSingle)
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: podspec.Of(&s.Handle).ObjectMeta(podspec.Of(&s.Handle).Name()),
		Spec: appsv1.DeploymentSpec{
			Replicas: s.replicaCount(),
			Selector: &metav1.LabelSelector{MatchLabels: s.selector()},
			Template: tmpl,
			// Model downloads outlast the 10-minute default; a Deployment
			// past its deadline reads as failed.
			ProgressDeadlineSeconds: ptr.To(s.startup() + 600),
		},
	}
	return d, errs
}

func (s *Service) service(r *rendering) *corev1.Service {
	e := s.engine
	meta := podspec.Of(&s.Handle).ObjectMeta(s.serviceName())
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	if port, path := e.metricsTarget(); path != "" {
		meta.Annotations["prometheus.io/scrape"] = "true"
		meta.Annotations["prometheus.io/port"] = fmt.Sprint(port)
		meta.Annotations["prometheus.io/path"] = path
	}
	sel := s.selector()
	if r.nodes > 1 {
		// Only the leader of each group serves HTTP.
		sel[lwsWorkerIndexLabel] = "0"
	}
	var ports []corev1.ServicePort
	for _, cp := range e.containerPorts() {
		ports = append(ports, corev1.ServicePort{
			Name: cp.Name, Port: cp.ContainerPort, TargetPort: intstr.FromString(cp.Name), Protocol: corev1.ProtocolTCP,
		})
	}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta,
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: sel,
			Ports:    ports,
		},
	}
}

func (s *Service) configMapName() string { return podspec.Of(&s.Handle).Name() + "-config" }

func (s *Service) configMap(r *rendering) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: podspec.Of(&s.Handle).ObjectMeta(s.configMapName()),
		Data:       maps.Clone(r.files),
	}
}

// configHash is a digest of the config files, stable across calls.
func configHash(files map[string]string) string {
	h := sha256.New()
	for _, k := range sortedKeys(files) {
		fmt.Fprintf(h, "%s\x00%s\x00", k, files[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
