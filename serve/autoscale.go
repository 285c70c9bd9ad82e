package serve

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/quantity"
)

// ScaleMetric is one signal the autoscaler follows. Make one with
// ScaleOnCPU, ScaleOnMemory, ScaleOnQueue or ScaleOnPodMetric.
type ScaleMetric struct {
	kind    metricKind
	percent int
	name    string
	target  string
}

type metricKind int

const (
	metricCPU metricKind = iota
	metricMemory
	metricQueue
	metricPods
)

// ScaleOnCPU scales to keep the pods' CPU use at percent of their CPU
// request (the service needs CPU set).
func ScaleOnCPU(percent int) ScaleMetric { return ScaleMetric{kind: metricCPU, percent: percent} }

// ScaleOnMemory scales to keep the pods' memory use at percent of their
// memory request (the service needs Memory set).
func ScaleOnMemory(percent int) ScaleMetric {
	return ScaleMetric{kind: metricMemory, percent: percent}
}

// ScaleOnQueue scales on the engine's own count of requests waiting per pod
// (vLLM vllm:num_requests_waiting, SGLang sglang:num_queue_reqs, TGI
// tgi_queue_size, Triton nv_inference_pending_request_count), keeping its
// average at averageWaiting ("5"). The HPA reads it as a Pods metric from
// the custom metrics API (custom.metrics.k8s.io), so the cluster must serve
// it there under that name, as prometheus-adapter does with a rule for it.
// KEDA cannot: its metrics server answers only the external metrics API,
// and only for the HPAs its own ScaledObjects create.
func ScaleOnQueue(averageWaiting string) ScaleMetric {
	return ScaleMetric{kind: metricQueue, target: averageWaiting}
}

// ScaleOnPodMetric scales on any per-pod custom metric, keeping its average
// at averageValue (a quantity: "10", "500m").
func ScaleOnPodMetric(name, averageValue string) ScaleMetric {
	return ScaleMetric{kind: metricPods, name: name, target: averageValue}
}

// metricNameProblems says why no metrics API can serve a custom metric of
// this name: the API server refuses a name that is not a path segment
// (k8s.io/kubernetes pkg/apis/autoscaling/validation, validateMetricIdentifier),
// and a name with spaces or control characters is no metric an adapter
// exports.
func metricNameProblems(name string) []string {
	msgs := path.IsValidPathSegmentName(name)
	if strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		msgs = append(msgs, "must not contain spaces or control characters")
	}
	return msgs
}

type autoscaling struct {
	min, max int32
	metrics  []ScaleMetric
}

// Autoscale adds an autoscaling/v2 HorizontalPodAutoscaler that keeps
// between minReplicas and maxReplicas replicas (LeaderWorkerSet groups for
// a multi-node service) following metrics. The workload then carries no
// replica count, so that applying it again does not undo the autoscaler.
func (s *Service) Autoscale(minReplicas, maxReplicas int, metrics ...ScaleMetric) *Service {
	if s == nil {
		return nil
	}
	p := field.NewPath("spec", "autoscale")
	min32, err := podspec.Int32(p.Child("minReplicas"), minReplicas)
	if err != nil {
		s.fail(err)
	}
	max32, err := podspec.Int32(p.Child("maxReplicas"), maxReplicas)
	if err != nil {
		s.fail(err)
	}
	s.autoscale = &autoscaling{min: min32, max: max32, metrics: slices.Clone(metrics)}
	return s
}

type autoscaleTarget struct{ apiVersion, kind string }

func (s *Service) horizontalPodAutoscaler(r *rendering, target autoscaleTarget, objs []client.Object) (*autoscalingv2.HorizontalPodAutoscaler, field.ErrorList) {
	a := s.autoscale
	p := field.NewPath("spec", "autoscale")
	var errs field.ErrorList
	if a.min < 1 {
		errs = append(errs, field.Invalid(p.Child("minReplicas"), a.min, "must be at least 1"))
	}
	if a.max < a.min {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), a.max, fmt.Sprintf("must be at least minReplicas (%d)", a.min)))
	}
	if s.replicas != nil {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "replicas"), "Replicas and Autoscale both set: the autoscaler owns the replica count"))
	}
	if len(a.metrics) == 0 {
		errs = append(errs, field.Required(p.Child("metrics"), "give at least one metric: ScaleOnQueue, ScaleOnCPU, ScaleOnMemory or ScaleOnPodMetric"))
	}
	requests := servingRequests(objs)
	var metrics []autoscalingv2.MetricSpec
	for i, m := range a.metrics {
		mp := p.Child("metrics").Index(i)
		switch m.kind {
		case metricCPU, metricMemory:
			res, setter := corev1.ResourceCPU, "CPU"
			if m.kind == metricMemory {
				res, setter = corev1.ResourceMemory, "Memory"
			}
			if m.percent < 1 {
				errs = append(errs, field.Invalid(mp.Child("percent"), m.percent, "must be at least 1"))
			}
			percent, err := podspec.Int32(mp.Child("percent"), m.percent)
			if err != nil {
				errs = append(errs, err)
			}
			if _, ok := requests[res]; !ok {
				errs = append(errs, field.Required(mp, fmt.Sprintf("scaling on %s utilisation needs a %s request: call %s", res, res, setter)))
			}
			metrics = append(metrics, autoscalingv2.MetricSpec{
				Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{Name: res, Target: autoscalingv2.MetricTarget{
					Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(percent),
				}},
			})
		case metricQueue, metricPods:
			name := m.name
			if m.kind == metricQueue {
				name = s.engine.queueMetric
				if name == "" {
					errs = append(errs, field.Forbidden(mp, s.engine.title+" exports no queue metric: use ScaleOnPodMetric"))
					continue
				}
			} else if name == "" {
				errs = append(errs, field.Required(mp.Child("name"), "a metric name is required"))
				continue
			} else if msgs := metricNameProblems(name); len(msgs) > 0 {
				errs = append(errs, field.Invalid(mp.Child("name"), name, strings.Join(msgs, "; ")))
				continue
			}
			q, err := quantity.ParseField(mp.Child("averageValue"), m.target, quantity.Positive)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			metrics = append(metrics, autoscalingv2.MetricSpec{
				Type: autoscalingv2.PodsMetricSourceType,
				Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: name},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q},
				},
			})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: podspec.Of(&s.Handle).ObjectMeta(podspec.Of(&s.Handle).Name()),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: target.apiVersion, Kind: target.kind, Name: podspec.Of(&s.Handle).Name()},
			MinReplicas:    ptr.To(a.min),
			MaxReplicas:    a.max,
			Metrics:        metrics,
		},
	}, nil
}

// servingRequests returns the resource requests of the serving container of
// the rendered workload (the leader's, for a LeaderWorkerSet).
func servingRequests(objs []client.Object) corev1.ResourceList {
	for _, o := range objs {
		switch w := o.(type) {
		case *appsv1.Deployment:
			if cs := w.Spec.Template.Spec.Containers; len(cs) > 0 {
				return cs[0].Resources.Requests
			}
		case *lwsv1.LeaderWorkerSet:
			if t := w.Spec.LeaderWorkerTemplate.LeaderTemplate; t != nil && len(t.Spec.Containers) > 0 {
				return t.Spec.Containers[0].Resources.Requests
			}
		}
	}
	return nil
}

// disruptionBudget limits voluntary disruptions (drains, upgrades) to
// one replica at a time, when there is more than one replica or a budget
// was asked for. For a LeaderWorkerSet the budget counts pods, not groups:
// evicting one pod of a group restarts the whole group
// (RecreateGroupOnPodRestart), whose pods then all count as unavailable,
// so a budget of k pods lets a drain break at most k groups. A budget of
// k × group size would let it take one pod from each of that many groups
// at once.
func (s *Service) disruptionBudget() *policyv1.PodDisruptionBudget {
	least := int32(1)
	switch {
	case s.autoscale != nil:
		least = s.autoscale.min
	case s.replicas != nil:
		least = *s.replicas
	}
	if s.maxUnavailable == nil && least <= 1 {
		return nil
	}
	groups := int32(1)
	if s.maxUnavailable != nil {
		groups = *s.maxUnavailable
	}
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: podspec.Of(&s.Handle).ObjectMeta(podspec.Of(&s.Handle).Name()),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(groups)),
			Selector:       &metav1.LabelSelector{MatchLabels: s.selector()},
		},
	}
}
