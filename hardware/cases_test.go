package hardware_test

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
)

// applyCase is one golden pod template: a placement applied to a plain
// template.
type applyCase struct {
	name      string
	placement hardware.Placement
}

// fabricsFor are the fabrics every profile is rendered with: none, TCP,
// InfiniBand and RoCE with the options that suit the profile's collective
// library (the InfiniBand case on Ascend keeps NCCL options to show the
// errors).
func fabricsFor(p hardware.Profile) []struct {
	name   string
	fabric hardware.Fabric
} {
	ib := hardware.InfiniBand(hardware.HCAs("mlx5_0", "mlx5_1"), hardware.SocketInterface("eth0"),
		hardware.Networks("ib-net"), hardware.GDRLevel("PHB"))
	roce := hardware.RoCE(hardware.HCAs("=mlx5_0:1"), hardware.SocketInterface("=ens1f0"),
		hardware.Networks("roce-net"), hardware.LegacyNCCL())
	tcp := hardware.TCP(hardware.SocketInterface("eth0"))
	if p.Vendor == hardware.Huawei {
		roce = hardware.RoCE(hardware.SocketInterface("eth0"), hardware.HCCLBufferSize(512),
			hardware.HCCLConnectTimeout(20*time.Minute))
	}
	if p.Accelerated() && p.Vendor != hardware.NVIDIA && p.Vendor != hardware.Huawei {
		// The other vendors get the options their collective library reads.
		c := p.Collective()
		ibOpts := []hardware.FabricOption{hardware.SocketInterface("eth0"), hardware.Networks("ib-net")}
		roceOpts := []hardware.FabricOption{hardware.SocketInterface("=ens1f0"), hardware.Networks("roce-net")}
		if c.IBHCA != "" {
			ibOpts = append(ibOpts, hardware.HCAs("mlx5_0", "mlx5_1"))
			roceOpts = append(roceOpts, hardware.HCAs("=mlx5_0:1"))
		}
		if c.GDRLevel != "" {
			ibOpts = append(ibOpts, hardware.GDRLevel("PHB"))
		}
		if c.IBGIDIndex != "" {
			roceOpts = append(roceOpts, hardware.LegacyNCCL())
		}
		ib, roce = hardware.InfiniBand(ibOpts...), hardware.RoCE(roceOpts...)
	}
	return []struct {
		name   string
		fabric hardware.Fabric
	}{{"none", hardware.Fabric{}}, {"tcp", tcp}, {"infiniband", ib}, {"roce", roce}}
}

// applyCases is every catalogue profile × fabric with a full node of
// devices, plus the flavour and runtime variants.
func applyCases() []applyCase {
	var cases []applyCase
	for _, p := range hardware.Catalogue() {
		for _, f := range fabricsFor(p) {
			count := p.MaxPerNode
			if !p.Accelerated() {
				count = 0
			}
			cases = append(cases, applyCase{
				name:      p.Name + "-" + f.name,
				placement: hardware.Placement{Profile: p, Accelerators: count, Fabric: f.fabric},
			})
		}
	}
	cases = append(cases,
		applyCase{"A100-SXM-80GB-mig-mixed", hardware.Placement{Profile: hardware.A100_80G.Plugin(hardware.MIGMixed), Accelerators: 1}},
		applyCase{"A100-SXM-80GB-mig-single", hardware.Placement{Profile: hardware.A100_80G.Plugin(hardware.MIGSingle), Accelerators: 2}},
		applyCase{"H100-SXM-80GB-hami", hardware.Placement{Profile: hardware.H100.Plugin(hardware.HAMi), Accelerators: 2}},
		applyCase{"H100-SXM-80GB-sriov", hardware.Placement{Profile: hardware.H100, Accelerators: 8,
			Fabric: hardware.InfiniBand(hardware.SRIOV("nvidia.com/mlnxnics", 8), hardware.Networks("ib-0", "ib-1"))}},
		applyCase{"H100-SXM-80GB-shm", hardware.Placement{Profile: hardware.H100, Accelerators: 1, SharedMemory: resource.MustParse("32Gi")}},
		applyCase{"Ascend910B3-hami", hardware.Placement{Profile: hardware.Ascend910B3.Plugin(hardware.HAMi), Accelerators: 1}},
		applyCase{"Ascend910B1-hami", hardware.Placement{Profile: hardware.Ascend910B1.Plugin(hardware.HAMi), Accelerators: 1}},
		applyCase{"Ascend910B2-no-runtime-roce", hardware.Placement{Profile: hardware.Ascend910B2.AscendDockerRuntime(false), Accelerators: 8,
			Fabric: hardware.RoCE(hardware.SocketInterface("enp189s0f0"))}},
		applyCase{"Ascend910B4-module16", hardware.Placement{Profile: hardware.Ascend910B4.PerNode(16).
			SelectNodes(map[string]string{hardware.LabelAcceleratorType: "module-910b-16"}), Accelerators: 16}},
		applyCase{"cpu-amd64-count", hardware.Placement{Profile: hardware.CPU, Accelerators: 1}},
		applyCase{"P800-infiniband-hcas", hardware.Placement{Profile: hardware.KunlunxinP800, Accelerators: 8,
			Fabric: hardware.InfiniBand(hardware.HCAs("mlx5_0"), hardware.HCCLBufferSize(64))}},
		applyCase{"DCU-K100-AI-no-host-mounts", hardware.Placement{Profile: hardware.HygonK100.MountHost(), Accelerators: 8}},
	)
	for _, p := range hardware.Catalogue() {
		if p.Accelerated() && p.Vendor != hardware.NVIDIA && p.Vendor != hardware.Huawei {
			cases = append(cases, applyCase{p.Name + "-hami", hardware.Placement{Profile: p.Plugin(hardware.HAMi), Accelerators: 2}})
		}
	}
	return cases
}

// baseTemplate is what a workload builder hands to Apply.
func baseTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers:    []corev1.Container{{Name: "main", Image: "registry.example/train:1"}},
		RestartPolicy: corev1.RestartPolicyNever,
	}}
}

var tmplPath = field.NewPath("spec", "template")

// render applies c to a fresh template.
func render(c applyCase) (corev1.PodTemplateSpec, field.ErrorList) {
	tmpl := baseTemplate()
	errs := hardware.Apply(&tmpl, "main", c.placement, tmplPath)
	return tmpl, errs
}

func errorText(errs field.ErrorList) string {
	var b strings.Builder
	b.WriteString("errors:\n")
	for _, e := range errs {
		fmt.Fprintf(&b, "- %s\n", e.Error())
	}
	return b.String()
}
