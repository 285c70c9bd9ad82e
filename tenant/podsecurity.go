package tenant

import (
	"errors"
	"maps"

	"github.com/cubestudio/cube"
)

// PodSecurityLevel is a Pod Security Standards level, enforced on a
// tenant's namespace by the API server's PodSecurity admission.
type PodSecurityLevel string

// Pod Security Standards levels.
const (
	PodSecurityPrivileged PodSecurityLevel = "privileged"
	PodSecurityBaseline   PodSecurityLevel = "baseline"
	PodSecurityRestricted PodSecurityLevel = "restricted"
)

var podSecurityLevels = []PodSecurityLevel{PodSecurityPrivileged, PodSecurityBaseline, PodSecurityRestricted}

// Pod Security admission labels of a namespace, which a tenant's namespace
// carries at its level.
const (
	LabelPodSecurityEnforce        = "pod-security.kubernetes.io/enforce"
	LabelPodSecurityEnforceVersion = "pod-security.kubernetes.io/enforce-version"
	LabelPodSecurityWarn           = "pod-security.kubernetes.io/warn"
	LabelPodSecurityAudit          = "pod-security.kubernetes.io/audit"
)

// namespaceLabels are the namespace's labels: the caller's and the Pod
// Security level.
func (t *Spec) namespaceLabels() map[string]string {
	out := maps.Clone(t.labels)
	if out == nil {
		out = map[string]string{}
	}
	for _, k := range []string{LabelPodSecurityEnforce, LabelPodSecurityWarn, LabelPodSecurityAudit} {
		out[k] = string(t.level())
	}
	out[LabelPodSecurityEnforceVersion] = "latest"
	out[LabelQueueing] = string(t.queueSystem())
	return out
}

// Admits reports, without a cluster, whether the Pod Security level of
// tenant t admits the pods of the workloads: nil, or a
// *cube.PodSecurityError naming every pod template the level refuses and
// why, as the API server's PodSecurity admission would (see
// cube.CheckPodSecurity). cube.Client.Apply makes the same check against
// the labels of the namespace it applies to.
func Admits(t *Spec, ws ...cube.Workload) error {
	if t == nil || !t.made {
		return errNotMade
	}
	return cube.CheckPodSecurity(t.name, t.namespaceLabels(), ws...)
}

// LevelFor returns the strictest Pod Security level at which tenant t
// admits every pod of the workloads: PodSecurityRestricted, else
// PodSecurityBaseline. When baseline refuses some pod it returns the
// *cube.PodSecurityError of the baseline level, naming each refused
// template and why (an RDMA fabric's IPC_LOCK, the host paths of a
// driver): LevelFor never chooses the privileged level, which admits
// privileged containers and host paths, so a tenant gets it only by asking
// (AllowRDMA, PodSecurity). Pass the level to PodSecurity:
//
//	level, err := tenant.LevelFor(team, notebook, job)
//	if err != nil { ... }
//	team.PodSecurity(level)
func LevelFor(t *Spec, ws ...cube.Workload) (PodSecurityLevel, error) {
	if t == nil || !t.made {
		return "", errNotMade
	}
	var refused error
	for _, level := range []PodSecurityLevel{PodSecurityRestricted, PodSecurityBaseline} {
		labels := map[string]string{LabelPodSecurityEnforce: string(level), LabelPodSecurityEnforceVersion: "latest"}
		if refused = cube.CheckPodSecurity(t.name, labels, ws...); refused == nil {
			return level, nil
		}
		var ps *cube.PodSecurityError
		if !errors.As(refused, &ps) {
			return "", refused // the workloads did not render: no level helps
		}
	}
	return "", refused
}
