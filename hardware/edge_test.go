package hardware_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/golden"
)

func edgeTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}}}}}}
}

func TestApplyEdge(t *testing.T) {
	tmpl := edgeTemplate()
	errs := hardware.ApplyEdge(&tmpl, "main", hardware.Edge{
		NodeLabels: map[string]string{"site": "shenzhen-3"}, Node: "edge-7", Arch: hardware.ARM64, HostNetwork: true,
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
	}, field.NewPath("spec", "template"))
	require.Empty(t, errs)
	assert.Equal(t, map[string]string{"node-role.kubernetes.io/edge": "", "site": "shenzhen-3", "kubernetes.io/hostname": "edge-7", "kubernetes.io/arch": "arm64"},
		tmpl.Spec.NodeSelector)
	assert.Equal(t, []corev1.Toleration{
		{Key: "node-role.kubernetes.io/edge", Operator: corev1.TolerationOpExists},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	}, tmpl.Spec.Tolerations)
	assert.True(t, tmpl.Spec.HostNetwork)
	assert.Equal(t, corev1.DNSClusterFirstWithHostNet, tmpl.Spec.DNSPolicy)

	// Applying twice adds nothing twice.
	require.Empty(t, hardware.ApplyEdge(&tmpl, "main", hardware.Edge{}, nil))
	assert.Len(t, tmpl.Spec.Tolerations, 3)
}

func TestApplyEdgeErrors(t *testing.T) {
	tmpl := edgeTemplate()
	tmpl.Spec.NodeSelector = map[string]string{"kubernetes.io/arch": "amd64"}
	before := tmpl.DeepCopy()
	errs := hardware.ApplyEdge(&tmpl, "main", hardware.Edge{
		NodeLabels: map[string]string{"bad key!": "x"}, Node: "Not_A_Node", Arch: "riscv",
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")},
	}, field.NewPath("spec", "template"))
	msg := errs.ToAggregate().Error()
	for _, want := range []string{
		`spec.template.edge.nodeLabels[bad key!]`,
		`spec.template.edge.node: Invalid value: "Not_A_Node"`,
		`spec.template.edge.arch: Unsupported value: "riscv"`,
		`spec.template.spec.nodeSelector[kubernetes.io/arch]: Invalid value: "riscv": conflicts with "amd64"`,
		`spec.template.spec.containers[0].resources.limits[cpu]: Invalid value: "2": exceeds the edge device's 1`,
		`spec.template.spec.containers[0].resources.limits[memory]: Invalid value: "4Gi": exceeds the edge device's 2Gi`,
	} {
		assert.Contains(t, msg, want)
	}
	assert.Equal(t, before, &tmpl, "unchanged on error")
	assert.NotEmpty(t, hardware.ApplyEdge(nil, "main", hardware.Edge{}, nil))
	assert.NotEmpty(t, hardware.ApplyEdge(&tmpl, "other", hardware.Edge{}, nil))
}

func FuzzApplyEdge(f *testing.F) {
	f.Add("site", "a", "edge-1", "arm64", "2")
	f.Fuzz(func(t *testing.T, k, v, node, arch, cpu string) {
		tmpl := edgeTemplate()
		e := hardware.Edge{NodeLabels: map[string]string{k: v}, Node: node, Arch: arch}
		if q, err := resource.ParseQuantity(cpu); err == nil {
			e.Capacity = corev1.ResourceList{corev1.ResourceCPU: q}
		}
		_ = hardware.ApplyEdge(&tmpl, "main", e, nil)
	})
}

func TestApplyGolden(t *testing.T) {
	for _, c := range applyCases() {
		t.Run(c.name, func(t *testing.T) {
			tmpl, errs := render(c)
			var got []byte
			if len(errs) > 0 {
				got = []byte(errorText(errs))
			} else {
				var err error
				got, err = yaml.Marshal(tmpl)
				require.NoError(t, err)
			}
			golden.Assert(t, c.name+".golden", got)
		})
	}
}
