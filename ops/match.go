package ops

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/hardware"
)

// matcher finds the profile of a pod's devices: the node's, when an
// inventory named it, else the one its node selectors or HAMi's GPU-type
// annotation name.
type matcher struct {
	nodes    map[string]hardware.Profile
	byGPU    map[string]hardware.Profile
	byNPU    map[string]hardware.Profile
	byHAMi   map[string]hardware.Profile
	profiles []hardware.Profile
}

func newMatcher(cfg usageConfig) *matcher {
	m := &matcher{nodes: cfg.nodes, byGPU: map[string]hardware.Profile{}, byNPU: map[string]hardware.Profile{},
		byHAMi: map[string]hardware.Profile{}, profiles: cfg.profiles}
	for _, p := range cfg.profiles {
		if !p.Accelerated() || p.Product == "" {
			continue
		}
		first := func(m map[string]hardware.Profile, k string) {
			if _, ok := m[k]; !ok && k != "" {
				m[k] = p
			}
		}
		if p.Vendor == hardware.NVIDIA {
			first(m.byGPU, p.Product)
			first(m.byHAMi, p.HAMiType)
		} else {
			first(m.byNPU, p.Product)
		}
	}
	return m
}

func (m *matcher) profile(pod *corev1.Pod) hardware.Profile {
	if p, ok := m.nodes[pod.Spec.NodeName]; ok && pod.Spec.NodeName != "" {
		return p
	}
	sel := pod.Spec.NodeSelector
	if p, ok := m.byGPU[sel[hardware.LabelGPUProduct]]; ok {
		return p
	}
	if p, ok := m.byNPU[sel[hardware.LabelNPUChipName]]; ok {
		return p
	}
	if p, ok := m.byHAMi[pod.Annotations[hardware.AnnotationHAMiGPUType]]; ok {
		return p
	}
	return hardware.Profile{}
}
