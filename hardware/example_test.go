package hardware_test

import (
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube/hardware"
)

func printYAML(v any) {
	b, err := yaml.Marshal(v)
	if err != nil {
		fmt.Println(err)
		return
	}
	os.Stdout.Write(b)
}

// A profile is a value: Apply turns it into resources, node selectors,
// tolerations and, for Ascend, the ring-controller label and the
// allocation annotation the runtime reads.
func ExampleApply_profile() {
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "mindie:1.0"}}}}
	errs := hardware.Apply(&tmpl, "main", hardware.Placement{Profile: hardware.Ascend910B3, Accelerators: 2},
		field.NewPath("spec", "template"))
	fmt.Println(errs)
	printYAML(tmpl)
	// Output:
	// []
	// metadata:
	//   labels:
	//     ring-controller.atlas: ascend-910b
	// spec:
	//   containers:
	//   - env:
	//     - name: ASCEND_VISIBLE_DEVICES
	//       valueFrom:
	//         fieldRef:
	//           apiVersion: v1
	//           fieldPath: metadata.annotations['huawei.com/Ascend910']
	//     image: mindie:1.0
	//     name: main
	//     resources:
	//       limits:
	//         huawei.com/Ascend910: "2"
	//       requests:
	//         huawei.com/Ascend910: "2"
	//     volumeMounts:
	//     - mountPath: /dev/shm
	//       name: dshm
	//   nodeSelector:
	//     accelerator: huawei-Ascend910
	//     node.kubernetes.io/npu.chip.name: 910B3
	//   tolerations:
	//   - effect: NoSchedule
	//     key: huawei.com/Ascend910
	//     operator: Exists
	//   volumes:
	//   - emptyDir:
	//       medium: Memory
	//       sizeLimit: 4Gi
	//     name: dshm
}

// A fabric adds the RDMA resource, the Multus network, IPC_LOCK and the
// NCCL variables; the same fabric on an Ascend profile is refused.
func ExampleRoCE() {
	fabric := hardware.RoCE(hardware.HCAs("mlx5_0", "mlx5_1"), hardware.SocketInterface("eth0"), hardware.Networks("roce-net"))
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "trainer:1"}}}}
	errs := hardware.Apply(&tmpl, "main", hardware.Placement{Profile: hardware.H100, Accelerators: 8, Fabric: fabric}, field.NewPath("spec"))
	fmt.Println(errs)
	c := tmpl.Spec.Containers[0]
	for _, e := range c.Env {
		fmt.Printf("%s=%s\n", e.Name, e.Value)
	}
	rdma := c.Resources.Limits["rdma/rdma_shared_device_a"]
	fmt.Println("rdma:", rdma.String(), "capabilities:", c.SecurityContext.Capabilities.Add,
		"networks:", tmpl.Annotations["k8s.v1.cni.cncf.io/networks"])

	ascend := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "trainer:1"}}}}
	for _, err := range hardware.Apply(&ascend, "main", hardware.Placement{Profile: hardware.Ascend910B2, Accelerators: 8, Fabric: fabric}, field.NewPath("spec")) {
		fmt.Println(err)
	}
	// Output:
	// []
	// NCCL_IB_HCA=mlx5_0,mlx5_1
	// NCCL_SOCKET_IFNAME=eth0
	// NCCL_DEBUG=WARN
	// rdma: 1 capabilities: [IPC_LOCK] networks: roce-net
	// spec.fabric.hcas: Forbidden: Ascend910B2 collectives use HCCL; NCCL settings do not apply
	// spec.fabric.networks: Forbidden: Ascend910B2 nodes talk over the NPUs' own RoCE ports; RDMA device plugins and Multus networks do not apply
}

// The inventory says what each node offers, matched to catalogue profiles.
func ExampleInventoryFromNodes() {
	nodes := inventoryNodes("", nil)[:5]
	for _, n := range hardware.InventoryFromNodes(nodes).Nodes {
		fmt.Printf("%-15s %-14s devices=%d mig=%v\n", n.Name, n.Profile.Name, n.Accelerators, n.MIG)
	}
	// Output:
	// h100            H100-SXM-80GB  devices=8 mig=map[]
	// a100-mig        A100-SXM-80GB  devices=8 mig=map[1g.10gb:14 3g.40gb:4]
	// a100-pcie       A100-SXM-80GB  devices=4 mig=map[]
	// a100-40-single  A100-SXM-40GB  devices=56 mig=map[]
	// ascend          Ascend910B3    devices=8 mig=map[]
}

// The other domestic accelerators swap in the same way: the vendor's
// device-plugin resource, the accelerator selector and the collective
// library's variables (RCCL reads NCCL's names on a Hygon DCU; a MetaX C500
// takes MCCL_*).
func ExampleApply_otherVendors() {
	for _, p := range []hardware.Profile{hardware.HygonK100, hardware.MetaXC500} {
		tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "train:1"}}}}
		errs := hardware.Apply(&tmpl, "main", hardware.Placement{Profile: p, Accelerators: 8,
			Fabric: hardware.RoCE(hardware.SocketInterface("eth0"))}, field.NewPath("spec", "template"))
		c := tmpl.Spec.Containers[0]
		q := c.Resources.Limits[p.ResourceName]
		fmt.Println(p.Name, errs, p.ResourceName, q.String(), tmpl.Spec.NodeSelector, p.Collective().Name)
		for _, e := range c.Env {
			fmt.Printf("  %s=%s\n", e.Name, e.Value)
		}
	}
	fmt.Println(hardware.CambriconMLU370.Plugin(hardware.HAMi).ResourceName)
	// Output:
	// DCU-K100-AI [] hygon.com/dcu 8 map[accelerator:hygon-K100_AI] RCCL
	//   NCCL_SOCKET_IFNAME=eth0
	//   NCCL_DEBUG=WARN
	// C500 [] metax-tech.com/gpu 8 map[accelerator:metax-C500] MCCL
	//   MCCL_SOCKET_IFNAME=eth0
	// cambricon.com/vmlu
}

func ExampleApplyEdge() {
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}}}
	errs := hardware.ApplyEdge(&tmpl, "main", hardware.Edge{Arch: hardware.ARM64, HostNetwork: true}, nil)
	fmt.Println(errs, tmpl.Spec.NodeSelector, tmpl.Spec.HostNetwork, tmpl.Spec.DNSPolicy)
	for _, t := range tmpl.Spec.Tolerations {
		effect := string(t.Effect)
		if effect == "" {
			effect = "(any effect)"
		}
		fmt.Println(t.Key, t.Operator, effect)
	}
	// Output:
	// [] map[kubernetes.io/arch:arm64 node-role.kubernetes.io/edge:] true ClusterFirstWithHostNet
	// node-role.kubernetes.io/edge Exists (any effect)
	// node.kubernetes.io/unreachable Exists NoExecute
	// node.kubernetes.io/not-ready Exists NoExecute
}
