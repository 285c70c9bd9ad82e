package podspec

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// CopySettings gives dst every pod and metadata setting of src (a builder
// of another kind), deep-copied, as if the same setters had been called
// on dst: what a workload that renders a second kind of object from the
// settings a user gave the first needs (an llm fine-tune that runs on
// Kubeflow Trainer v2 instead of the training-operator). dst keeps its own
// kind and release name; the problems src recorded come along, so that
// dst's Objects reports them.
func CopySettings[T, U any](dst *Builder[U], src *Builder[T]) {
	m, s := &dst.Meta, &src.Meta
	m.namespace, m.partOf, m.localQueue, m.workloadPriority = s.namespace, s.partOf, s.localQueue, s.workloadPriority
	m.labels, m.annotations = maps.Clone(s.labels), maps.Clone(s.annotations)

	dst.image, dst.pullPolicy = src.image, src.pullPolicy
	dst.command, dst.args = slices.Clone(src.command), slices.Clone(src.args)
	dst.workingDir = src.workingDir
	dst.env = make([]corev1.EnvVar, 0, len(src.env))
	for _, e := range src.env {
		dst.env = append(dst.env, *e.DeepCopy())
	}
	dst.envFrom = nil
	for _, e := range src.envFrom {
		dst.envFrom = append(dst.envFrom, *e.DeepCopy())
	}
	dst.requests, dst.limits = maps.Clone(src.requests), maps.Clone(src.limits)
	dst.profile = nil
	if src.profile != nil {
		p := *src.profile
		dst.profile = &p
	}
	dst.devices, dst.devicesSet = src.devices, src.devicesSet
	dst.slice = src.slice // the caller's, as Slice keeps it
	dst.fabric, dst.sharedMemory = src.fabric, src.sharedMemory
	dst.volumes = make([]mountedVolume, 0, len(src.volumes))
	for _, v := range src.volumes {
		v.volume = *v.volume.DeepCopy()
		dst.volumes = append(dst.volumes, v)
	}
	dst.nodeSelector = maps.Clone(src.nodeSelector)
	dst.tolerations = nil
	for _, t := range src.tolerations {
		dst.tolerations = append(dst.tolerations, *t.DeepCopy())
	}
	dst.affinity = src.affinity.DeepCopy()
	dst.priorityClass, dst.serviceAccount = src.priorityClass, src.serviceAccount
	dst.pullSecrets = slices.Clone(src.pullSecrets)
	dst.scheduler, dst.queue = src.scheduler, src.queue
	dst.podLabels, dst.podAnnotations = maps.Clone(src.podLabels), maps.Clone(src.podAnnotations)
	dst.podSecurity = src.podSecurity.DeepCopy()
	dst.containerSecure = src.containerSecure.DeepCopy()
	dst.ports = slices.Clone(src.ports)
	dst.hostNetwork = src.hostNetwork
	dst.edge = nil
	if src.edge != nil {
		e := *src.edge
		e.NodeLabels, e.Capacity = maps.Clone(e.NodeLabels), e.Capacity.DeepCopy()
		dst.edge = &e
	}
	dst.sharedClaim = src.sharedClaim
	dst.problems = append(dst.problems[:0:0], src.problems...)
}
