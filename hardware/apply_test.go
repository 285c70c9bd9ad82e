package hardware_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/golden"
)

func errStrings(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

func TestApplyWholeGPUsWithInfiniBand(t *testing.T) {
	tmpl := baseTemplate()
	errs := hardware.Apply(&tmpl, "main", hardware.Placement{
		Profile: hardware.H100, Accelerators: 8,
		Fabric: hardware.InfiniBand(hardware.HCAs("mlx5_0", "mlx5_1"), hardware.SocketInterface("eth0"),
			hardware.Networks("ib-a", "ib-b"), hardware.GDRLevel("PHB"), hardware.NCCLDebug("INFO")),
	}, tmplPath)
	require.Empty(t, errs)
	c := tmpl.Spec.Containers[0]
	eight := resource.MustParse("8")
	one := resource.MustParse("1")
	assert.True(t, eight.Equal(c.Resources.Limits["nvidia.com/gpu"]))
	assert.True(t, eight.Equal(c.Resources.Requests["nvidia.com/gpu"]))
	assert.True(t, one.Equal(c.Resources.Limits["rdma/rdma_shared_device_a"]))
	assert.True(t, one.Equal(c.Resources.Requests["rdma/rdma_shared_device_a"]))
	assert.Equal(t, []corev1.EnvVar{
		{Name: "NCCL_IB_HCA", Value: "mlx5_0,mlx5_1"},
		{Name: "NCCL_SOCKET_IFNAME", Value: "eth0"},
		{Name: "NCCL_NET_GDR_LEVEL", Value: "PHB"},
		{Name: "NCCL_DEBUG", Value: "INFO"},
	}, c.Env)
	assert.Equal(t, []corev1.Capability{"IPC_LOCK"}, c.SecurityContext.Capabilities.Add)
	assert.Equal(t, map[string]string{"k8s.v1.cni.cncf.io/networks": "ib-a,ib-b"}, tmpl.Annotations)
	assert.Equal(t, map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, tmpl.Spec.NodeSelector)
	assert.Equal(t, []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		tmpl.Spec.Tolerations)
	require.Len(t, tmpl.Spec.Volumes, 1)
	assert.Equal(t, "dshm", tmpl.Spec.Volumes[0].Name)
	assert.Equal(t, corev1.StorageMediumMemory, tmpl.Spec.Volumes[0].EmptyDir.Medium)
	assert.Equal(t, "16Gi", tmpl.Spec.Volumes[0].EmptyDir.SizeLimit.String())
	assert.Equal(t, []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"}}, c.VolumeMounts)
}

func TestApplyAscendWithoutRuntime(t *testing.T) {
	tmpl := baseTemplate()
	errs := hardware.Apply(&tmpl, "main", hardware.Placement{
		Profile: hardware.Ascend910B3.AscendDockerRuntime(false), Accelerators: 4,
		Fabric: hardware.RoCE(hardware.SocketInterface("eth0"), hardware.HCCLBufferSize(1024),
			hardware.HCCLConnectTimeout(30*time.Minute)),
	}, tmplPath)
	require.Empty(t, errs)
	c := tmpl.Spec.Containers[0]
	four := resource.MustParse("4")
	assert.True(t, four.Equal(c.Resources.Limits["huawei.com/Ascend910"]))
	assert.NotContains(t, c.Resources.Limits, corev1.ResourceName("rdma/rdma_shared_device_a"))
	assert.Nil(t, c.SecurityContext, "910B RoCE needs no IPC_LOCK from an RDMA plugin")
	assert.Equal(t, map[string]string{"ring-controller.atlas": "ascend-910b"}, tmpl.Labels)
	assert.Empty(t, tmpl.Annotations)
	assert.Equal(t, []corev1.EnvVar{
		{Name: "ASCEND_VISIBLE_DEVICES", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			APIVersion: "v1", FieldPath: "metadata.annotations['huawei.com/Ascend910']"}}},
		{Name: "HCCL_IF_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			APIVersion: "v1", FieldPath: "status.podIP"}}},
		{Name: "HCCL_SOCKET_IFNAME", Value: "eth0"},
		{Name: "HCCL_CONNECT_TIMEOUT", Value: "1800"},
		{Name: "HCCL_BUFFSIZE", Value: "1024"},
	}, c.Env)
	var paths []string
	for _, m := range c.VolumeMounts {
		paths = append(paths, m.MountPath)
		if m.MountPath != "/dev/shm" {
			assert.True(t, m.ReadOnly, m.MountPath)
		}
	}
	assert.Equal(t, []string{"/usr/local/dcmi", "/usr/local/bin/npu-smi", "/usr/local/Ascend/driver/lib64",
		"/usr/local/Ascend/driver/version.info", "/etc/ascend_install.info",
		"/usr/local/Ascend/driver/tools/hccn_tool", "/etc/hccn.conf", "/dev/shm"}, paths)
	assert.Equal(t, map[string]string{"accelerator": "huawei-Ascend910", "node.kubernetes.io/npu.chip.name": "910B3"},
		tmpl.Spec.NodeSelector)
}

func TestApplyAscendHAMiAndSliceHost(t *testing.T) {
	// Count 0 is how the pod settings call Apply before a vgpu slice: node
	// selectors, labels and mounts come, devices do not.
	tmpl := baseTemplate()
	require.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{Profile: hardware.Ascend910B4.AscendDockerRuntime(false)}, tmplPath))
	c := tmpl.Spec.Containers[0]
	assert.Empty(t, c.Resources.Limits)
	assert.Empty(t, c.Env, "ASCEND_VISIBLE_DEVICES only comes with whole NPUs")
	assert.Len(t, c.VolumeMounts, 5, "driver mounts, no /dev/shm without devices or fabric")
	assert.Equal(t, "ascend-910b", tmpl.Labels["ring-controller.atlas"])

	tmpl = baseTemplate()
	require.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{Profile: hardware.Ascend910B3.Plugin(hardware.HAMi), Accelerators: 2}, tmplPath))
	two := resource.MustParse("2")
	assert.True(t, two.Equal(tmpl.Spec.Containers[0].Resources.Limits["huawei.com/Ascend910B3"]))
	assert.Empty(t, tmpl.Labels, "ring-controller is for Huawei's own scheduler stack")
	assert.Empty(t, tmpl.Spec.Containers[0].Env)
}

func TestApplyNVIDIAFlavours(t *testing.T) {
	tmpl := baseTemplate()
	require.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{Profile: hardware.A100_40G.Plugin(hardware.HAMi), Accelerators: 1}, tmplPath))
	lim := tmpl.Spec.Containers[0].Resources.Limits
	assert.Equal(t, "1", ptr(lim["nvidia.com/gpu"]).String())
	assert.Equal(t, "100", ptr(lim["nvidia.com/gpumem-percentage"]).String())
	assert.Equal(t, "100", ptr(lim["nvidia.com/gpucores"]).String())
	assert.Equal(t, map[string]string{"nvidia.com/use-gputype": "A100"}, tmpl.Annotations)

	tmpl = baseTemplate()
	require.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{Profile: hardware.H200.Plugin(hardware.MIGSingle), Accelerators: 7}, tmplPath))
	assert.Equal(t, map[string]string{"nvidia.com/mig.strategy": "single"}, tmpl.Spec.NodeSelector)

	tmpl = baseTemplate()
	require.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{Profile: hardware.B200.Plugin(hardware.MIGMixed), Accelerators: 1}, tmplPath))
	assert.Equal(t, map[string]string{"nvidia.com/gpu.product": "NVIDIA-B200"}, tmpl.Spec.NodeSelector)
}

func ptr(q resource.Quantity) *resource.Quantity { return &q }

func TestApplyTCPAndCPU(t *testing.T) {
	tmpl := baseTemplate()
	require.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{Profile: hardware.L4, Accelerators: 2, Fabric: hardware.TCP()}, tmplPath))
	assert.Equal(t, []corev1.EnvVar{{Name: "NCCL_IB_DISABLE", Value: "1"}, {Name: "NCCL_DEBUG", Value: "WARN"}}, tmpl.Spec.Containers[0].Env)
	assert.Nil(t, tmpl.Spec.Containers[0].SecurityContext)
	assert.Equal(t, "4Gi", tmpl.Spec.Volumes[0].EmptyDir.SizeLimit.String())

	tmpl = baseTemplate()
	require.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{Profile: hardware.CPUArm64}, tmplPath))
	assert.Equal(t, map[string]string{"kubernetes.io/arch": "arm64"}, tmpl.Spec.NodeSelector)
	assert.Empty(t, tmpl.Spec.Volumes)
	assert.Empty(t, tmpl.Spec.Tolerations)

	tmpl = baseTemplate()
	require.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{}, tmplPath))
	assert.Equal(t, baseTemplate(), tmpl, "the zero placement changes nothing")
}

func TestApplyIsIdempotentAndMerges(t *testing.T) {
	tmpl := baseTemplate()
	tmpl.Annotations = map[string]string{"k8s.v1.cni.cncf.io/networks": "default/macvlan"}
	tmpl.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "TRACE"}, {Name: "KEEP", Value: "1"}}
	tmpl.Spec.NodeSelector = map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "zone": "a"}
	p := hardware.Placement{Profile: hardware.A100_80G, Accelerators: 4, Fabric: hardware.RoCE(hardware.Networks("roce-a", "default/macvlan"))}
	require.Empty(t, hardware.Apply(&tmpl, "main", p, tmplPath))
	once := *tmpl.DeepCopy()
	require.Empty(t, hardware.Apply(&tmpl, "main", p, tmplPath))
	assert.Equal(t, once, tmpl)
	assert.Equal(t, "default/macvlan,roce-a", tmpl.Annotations["k8s.v1.cni.cncf.io/networks"])
	assert.Equal(t, []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "WARN"}, {Name: "KEEP", Value: "1"}}, tmpl.Spec.Containers[0].Env)
	assert.Equal(t, "a", tmpl.Spec.NodeSelector["zone"])
	assert.Len(t, tmpl.Spec.Tolerations, 1)
	assert.Equal(t, []corev1.Capability{"IPC_LOCK"}, tmpl.Spec.Containers[0].SecurityContext.Capabilities.Add)

	// A second container joins the same /dev/shm volume.
	tmpl.Spec.Containers = append(tmpl.Spec.Containers, corev1.Container{Name: "sidecar", Image: "x"})
	require.Empty(t, hardware.Apply(&tmpl, "sidecar", hardware.Placement{Profile: hardware.A100_80G, Accelerators: 4}, tmplPath))
	assert.Len(t, tmpl.Spec.Volumes, 1)
	assert.Equal(t, []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"}}, tmpl.Spec.Containers[1].VolumeMounts)
}

func TestApplyPlacementErrors(t *testing.T) {
	cases := []struct {
		name string
		p    hardware.Placement
		want []string
	}{
		{"no profile", hardware.Placement{Accelerators: 1},
			[]string{"spec.template.profile: Required value: a hardware profile is required for devices or a fabric"}},
		{"flavour of another vendor", hardware.Placement{Profile: hardware.H100.Plugin(hardware.HuaweiDevicePlugin), Accelerators: 1},
			[]string{`spec.template.profile.flavour: Unsupported value: "huawei-device-plugin": supported values: "nvidia-device-plugin", "nvidia-mig-single", "nvidia-mig-mixed", "hami", "nvidia-dra", "hami-dra"`,
				`spec.template.profile.resourceName: Required value: H100-SXM-80GB has no resource name under flavour "huawei-device-plugin"; set one with Resource`}},
		{"MIG on a card without MIG", hardware.Placement{Profile: hardware.T4.Plugin(hardware.MIGMixed), Accelerators: 1},
			[]string{`spec.template.profile.flavour: Invalid value: "nvidia-mig-mixed": T4 has no MIG; use nvidia-device-plugin`}},
		{"negative count", hardware.Placement{Profile: hardware.H100, Accelerators: -1},
			[]string{"spec.template.accelerators: Invalid value: -1: must not be negative"}},
		{"too many devices", hardware.Placement{Profile: hardware.Ascend910B2, Accelerators: 16},
			[]string{"spec.template.accelerators: Invalid value: 16: more devices per pod than a Ascend910B2 node holds (8)"}},
		{"nodes holding no devices", hardware.Placement{Profile: hardware.H100.PerNode(0), Accelerators: 64},
			[]string{"spec.template.profile.maxPerNode: Invalid value: 0: must be at least 1: how many H100-SXM-80GB devices a node holds (PerNode)"}},
		{"devices on CPU", hardware.Placement{Profile: hardware.CPU, Accelerators: 2},
			[]string{"spec.template.accelerators: Invalid value: 2: cpu-amd64 has no accelerators to request"}},
		{"no HAMi name", hardware.Placement{Profile: hardware.Ascend910B1.Plugin(hardware.HAMi), Accelerators: 1},
			[]string{`spec.template.profile.resourceName: Required value: Ascend910B1 has no resource name under flavour "hami"; set one with Resource`}},
		{"negative shared memory", hardware.Placement{Profile: hardware.H100, SharedMemory: resource.MustParse("-1Gi")},
			[]string{`spec.template.sharedMemory: Invalid value: "-1Gi": must not be negative`}},
		{"RDMA without a resource", hardware.Placement{Profile: hardware.H100, Accelerators: 8, Fabric: hardware.InfiniBand(hardware.RDMASharedDevice(""))},
			[]string{"spec.template.fabric.rdmaResource: Required value: an RDMA fabric needs an RDMA device resource (RDMASharedDevice or SRIOV)"}},
		{"bad fabric options", hardware.Placement{Profile: hardware.H100, Accelerators: 8, Fabric: hardware.RoCE(
			hardware.GDRLevel("FAST"), hardware.NCCLDebug("LOUD"), hardware.GIDIndex(-2), hardware.SRIOV("nvidia.com/mlnxnics", 0), hardware.Networks(""))},
			[]string{
				`spec.template.fabric.gdrLevel: Invalid value: "FAST": must be one of LOC,PIX,PXB,PHB,SYS,NVL,C2C,P2C`,
				`spec.template.fabric.ncclDebug: Invalid value: "LOUD": must be one of VERSION,WARN,INFO,ABORT,TRACE`,
				"spec.template.fabric.gidIndex: Invalid value: -2: must not be negative",
				"spec.template.fabric.sriov: Invalid value: 0: must request at least one virtual function",
				`spec.template.fabric.networks: Invalid value: "": network name must not be empty`,
			}},
		{"HCCL options out of range", hardware.Placement{Profile: hardware.Ascend910B3, Accelerators: 8, Fabric: hardware.RoCE(
			hardware.HCCLConnectTimeout(time.Second), hardware.HCCLBufferSize(0))},
			[]string{
				`spec.template.fabric.hcclConnectTimeout: Invalid value: "1s": must be between 2m0s and 2h0m0s`,
				"spec.template.fabric.hcclBufferSize: Invalid value: 0: must be at least 1 MB",
			}},
		{"Ascend with NCCL settings", hardware.Placement{Profile: hardware.Ascend910B3, Accelerators: 8, Fabric: hardware.RoCE(
			hardware.HCAs("mlx5_0"), hardware.LegacyNCCL(), hardware.NCCLDebug("INFO"))},
			[]string{
				"spec.template.fabric.hcas: Forbidden: Ascend910B3 collectives use HCCL; NCCL settings do not apply",
				"spec.template.fabric.gidIndex: Forbidden: Ascend910B3 collectives use HCCL; NCCL settings do not apply",
				"spec.template.fabric.ncclDebug: Forbidden: Ascend910B3 collectives use HCCL; NCCL settings do not apply",
			}},
		{"Ascend on InfiniBand", hardware.Placement{Profile: hardware.Ascend910B4, Accelerators: 8, Fabric: hardware.InfiniBand()},
			[]string{`spec.template.fabric.kind: Invalid value: "infiniband": Ascend910B4 has no InfiniBand; Ascend NPUs talk RoCE over their own ports`}},
		{"Ascend with RDMA plugin and Multus", hardware.Placement{Profile: hardware.Ascend910B2, Accelerators: 8, Fabric: hardware.RoCE(
			hardware.RDMASharedDevice("rdma/hca"), hardware.Networks("roce"))},
			[]string{
				"spec.template.fabric.rdmaSharedDevice: Forbidden: Ascend910B2 nodes talk over the NPUs' own RoCE ports; RDMA device plugins and Multus networks do not apply",
				"spec.template.fabric.networks: Forbidden: Ascend910B2 nodes talk over the NPUs' own RoCE ports; RDMA device plugins and Multus networks do not apply",
			}},
		{"310P on RoCE", hardware.Placement{Profile: hardware.Ascend310P3, Accelerators: 1, Fabric: hardware.RoCE()},
			[]string{`spec.template.fabric.kind: Invalid value: "roce": Ascend310P3 has no RoCE ports; use TCP`}},
		{"NVIDIA with HCCL settings", hardware.Placement{Profile: hardware.A10, Accelerators: 1, Fabric: hardware.TCP(hardware.HCCLBufferSize(100))},
			[]string{"spec.template.fabric.hcclBufferSize: Forbidden: A10 collectives use NCCL; HCCL settings do not apply"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl := baseTemplate()
			errs := hardware.Apply(&tmpl, "main", c.p, tmplPath)
			assert.Equal(t, c.want, errStrings(errs))
			assert.Equal(t, baseTemplate(), tmpl, "an invalid placement leaves the template unchanged")
		})
	}
}

func TestApplyTemplateErrors(t *testing.T) {
	p := hardware.Placement{Profile: hardware.Ascend910B3, Accelerators: 1, Fabric: hardware.RoCE()}
	assert.Equal(t, []string{"spec.template: Required value: pod template must not be nil"},
		errStrings(hardware.Apply(nil, "main", p, tmplPath)))

	tmpl := baseTemplate()
	assert.Equal(t, []string{`spec.template.spec.containers: Not found: "trainer"`},
		errStrings(hardware.Apply(&tmpl, "trainer", p, tmplPath)))

	tmpl = baseTemplate()
	tmpl.Labels = map[string]string{"ring-controller.atlas": "ascend-910"}
	tmpl.Spec.NodeSelector = map[string]string{"node.kubernetes.io/npu.chip.name": "910B4"}
	tmpl.Spec.Volumes = []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	before := *tmpl.DeepCopy()
	assert.Equal(t, []string{
		`spec.template.spec.nodeSelector[node.kubernetes.io/npu.chip.name]: Invalid value: "910B4": conflicts with "910B3" required by the hardware profile`,
		`spec.template.metadata.labels[ring-controller.atlas]: Invalid value: "ascend-910": conflicts with "ascend-910b" required by the hardware`,
		`spec.template.spec.volumes[0].name: Duplicate value: "dshm"`,
	}, errStrings(hardware.Apply(&tmpl, "main", p, tmplPath)))
	assert.Equal(t, before, tmpl)

	tmpl = baseTemplate()
	tmpl.Annotations = map[string]string{"k8s.v1.cni.cncf.io/networks": `[{"name":"a"}]`, "nvidia.com/use-gputype": "V100"}
	tmpl.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/dev/shm"}}
	assert.Equal(t, []string{
		`spec.template.metadata.annotations[nvidia.com/use-gputype]: Invalid value: "V100": conflicts with "H100" required by the hardware`,
		`spec.template.metadata.annotations[k8s.v1.cni.cncf.io/networks]: Invalid value: "[{\"name\":\"a\"}]": a JSON network list cannot be merged with the fabric's networks; give them all as Networks`,
		`spec.template.spec.containers[0].volumeMounts[0].mountPath: Duplicate value: "/dev/shm"`,
	}, errStrings(hardware.Apply(&tmpl, "main", hardware.Placement{Profile: hardware.H100.Plugin(hardware.HAMi), Accelerators: 1,
		Fabric: hardware.InfiniBand(hardware.Networks("ib"))}, tmplPath)))
}

func TestApplyDevices(t *testing.T) {
	r := hardware.DeviceRequest{
		Resources:    map[corev1.ResourceName]int64{"nvidia.com/gpu": 1, "nvidia.com/gpumem": 10240},
		Annotations:  map[string]string{"nvidia.com/use-gputype": "A100"},
		Labels:       map[string]string{"team": "a"},
		NodeSelector: map[string]string{"nvidia.com/gpu.product": "X-MIG-1g.10gb"},
		Env:          []corev1.EnvVar{{Name: "A", Value: "1"}},
	}
	tmpl := baseTemplate()
	tmpl.Spec.NodeSelector = map[string]string{"nvidia.com/gpu.product": "X"}
	require.Empty(t, hardware.ApplyDevices(&tmpl, "main", r, tmplPath))
	assert.Equal(t, "X-MIG-1g.10gb", tmpl.Spec.NodeSelector["nvidia.com/gpu.product"], "a slice narrows the profile's selector")
	assert.Equal(t, "10240", ptr(tmpl.Spec.Containers[0].Resources.Requests["nvidia.com/gpumem"]).String())
	assert.Equal(t, "a", tmpl.Labels["team"])
	assert.Equal(t, []corev1.EnvVar{{Name: "A", Value: "1"}}, tmpl.Spec.Containers[0].Env)

	assert.Equal(t, []string{"spec.template: Required value: pod template must not be nil"}, errStrings(hardware.ApplyDevices(nil, "main", r, tmplPath)))
	tmpl = baseTemplate()
	assert.Equal(t, []string{`spec.template.spec.containers: Not found: "x"`}, errStrings(hardware.ApplyDevices(&tmpl, "x", r, tmplPath)))
	tmpl = baseTemplate()
	tmpl.Annotations = map[string]string{"nvidia.com/use-gputype": "H100"}
	tmpl.Labels = map[string]string{"team": "b"}
	assert.Equal(t, []string{
		`spec.template.metadata.annotations[nvidia.com/use-gputype]: Invalid value: "H100": conflicts with "A100" required by the hardware`,
		`spec.template.metadata.labels[team]: Invalid value: "b": conflicts with "a" required by the hardware`,
	}, errStrings(hardware.ApplyDevices(&tmpl, "main", r, tmplPath)))
	assert.Empty(t, tmpl.Spec.Containers[0].Resources.Limits, "unchanged on error")
}

// DropAnnotationVisibleDevices takes out only the annotation-fed
// ASCEND_VISIBLE_DEVICES Apply adds (mind-cluster's device plugin sets the
// variable itself from Allocate), in every container, and leaves the rest.
func TestDropAnnotationVisibleDevices(t *testing.T) {
	require.NotPanics(t, func() { hardware.DropAnnotationVisibleDevices(nil) })

	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}, {Name: "side"}}}}
	require.Empty(t, hardware.Apply(tmpl, "main", hardware.Placement{Profile: hardware.Ascend910B3, Accelerators: 2}, field.NewPath("spec")))
	fromAnnotation := corev1.EnvVar{Name: "ASCEND_VISIBLE_DEVICES", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.annotations['huawei.com/Ascend910']"}}}
	require.Contains(t, tmpl.Spec.Containers[0].Env, fromAnnotation, "Apply reads the devices from Volcano's annotation")
	literal := corev1.EnvVar{Name: "ASCEND_VISIBLE_DEVICES", Value: "0,1"}
	other := corev1.EnvVar{Name: "TZ", Value: "UTC"}
	tmpl.Spec.Containers[1].Env = []corev1.EnvVar{fromAnnotation, other}

	hardware.DropAnnotationVisibleDevices(tmpl)
	assert.NotContains(t, tmpl.Spec.Containers[0].Env, fromAnnotation)
	assert.Equal(t, []corev1.EnvVar{other}, tmpl.Spec.Containers[1].Env)
	npus := tmpl.Spec.Containers[0].Resources.Limits[hardware.Ascend910B3.ResourceName]
	assert.Equal(t, int64(2), npus.Value(), "the devices are still requested")

	tmpl.Spec.Containers[1].Env = []corev1.EnvVar{literal}
	hardware.DropAnnotationVisibleDevices(tmpl)
	assert.Equal(t, []corev1.EnvVar{literal}, tmpl.Spec.Containers[1].Env, "a value the caller wrote stays")
}

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
