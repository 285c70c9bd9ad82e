package serve

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/cubestudio/cube/internal/podspec"
)

const (
	lwsAPIVersion = "leaderworkerset.x-k8s.io/v1"
	// lwsWorkerIndexLabel is 0 on the leader of each group.
	lwsWorkerIndexLabel = lwsv1.WorkerIndexLabelKey
)

// leaderWorkerSet renders a replica that spans nodes as a LeaderWorkerSet
// (sigs.k8s.io/lws v0.8.0): one group per replica, group size = nodes. The
// leader runs the engine's head and serves HTTP; the workers join it. A
// failed pod recreates its whole group, and the workers start with the
// leader (LeaderCreated): a vLLM leader waits for them before it is ready.
func (s *Service) leaderWorkerSet(r *rendering) (*lwsv1.LeaderWorkerSet, field.ErrorList) {
	base := field.NewPath("spec", "leaderWorkerTemplate")
	leader, errs := s.podTemplate(r, base.Child("leaderTemplate"), roleLeader)
	worker, workerErrs := s.podTemplate(r, base.Child("workerTemplate"), roleWorker)
	size := int32(r.nodes)
	return &lwsv1.LeaderWorkerSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: lwsAPIVersion, Kind: "LeaderWorkerSet"},
		ObjectMeta: podspec.Of(&s.Handle).ObjectMeta(podspec.Of(&s.Handle).Name()),
		Spec: lwsv1.LeaderWorkerSetSpec{
			Replicas: s.replicaCount(),
			LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{
				LeaderTemplate: &leader,
				WorkerTemplate: worker,
				Size:           &size,
				RestartPolicy:  lwsv1.RecreateGroupOnPodRestart,
			},
			RolloutStrategy: lwsv1.RolloutStrategy{
				Type: lwsv1.RollingUpdateStrategyType,
				RollingUpdateConfiguration: &lwsv1.RollingUpdateConfiguration{
					MaxUnavailable: intstr.FromInt32(1),
					MaxSurge:       intstr.FromInt32(0),
				},
			},
			StartupPolicy: lwsv1.LeaderCreatedStartupPolicy,
		},
	}, append(errs, workerErrs...)
}
