package hardware

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Shared-memory defaults for /dev/shm when Placement.SharedMemory is zero.
var (
	// DefaultSharedMemoryPerDevice is /dev/shm per requested device: NCCL's
	// SHM transport and PyTorch data-loader workers outgrow the 64 MiB
	// container default quickly.
	DefaultSharedMemoryPerDevice = resource.MustParse("2Gi")
	// MinSharedMemory is the least /dev/shm a pod on accelerators or a
	// fabric gets.
	MinSharedMemory = resource.MustParse("1Gi")
)

// Names of what Apply adds to a pod.
const (
	SharedMemoryVolume = "dshm"
	SharedMemoryPath   = "/dev/shm"
	// HAMiGPUMemoryPercentage and HAMiGPUCores make a HAMi whole-GPU request
	// exclusive.
	HAMiGPUMemoryPercentage = corev1.ResourceName("nvidia.com/gpumem-percentage")
	HAMiGPUCores            = corev1.ResourceName("nvidia.com/gpucores")
)

// ascendDriverMount is a host path mounted read-only at the same path when
// the Ascend Docker Runtime is absent.
type ascendDriverMount struct {
	volume, path string
	fileType     corev1.HostPathType
}

// ascendDriverMounts are what the Ascend Docker Runtime would inject; the
// device plugin alone only adds /dev nodes.
var ascendDriverMounts = []ascendDriverMount{
	{"ascend-dcmi", "/usr/local/dcmi", corev1.HostPathDirectory},
	{"ascend-npu-smi", "/usr/local/bin/npu-smi", corev1.HostPathFile},
	{"ascend-driver-lib64", "/usr/local/Ascend/driver/lib64", corev1.HostPathDirectory},
	{"ascend-driver-version", "/usr/local/Ascend/driver/version.info", corev1.HostPathFile},
	{"ascend-install-info", "/etc/ascend_install.info", corev1.HostPathFile},
}

// ascendNetworkMounts configure the NPUs' RoCE ports; needed for multi-node
// HCCL without the Ascend Docker Runtime.
var ascendNetworkMounts = []ascendDriverMount{
	{"ascend-hccn-tool", "/usr/local/Ascend/driver/tools/hccn_tool", corev1.HostPathFile},
	{"ascend-hccn-conf", "/etc/hccn.conf", corev1.HostPathFile},
}

// Placement is what one pod asks of the hardware.
type Placement struct {
	// Profile of the devices and nodes.
	Profile Profile
	// Accelerators is whole devices per pod (GPUs or NPUs, per the profile), as
	// pod.Builder.Accelerators sets it. 0 requests none: a CPU-only pod, or a pod
	// whose devices come from a vgpu slice applied after Apply.
	Accelerators int
	// Fabric between pods; the zero value adds no networking.
	Fabric Fabric
	// SharedMemory sizes /dev/shm. Zero means DefaultSharedMemoryPerDevice
	// per device (at least MinSharedMemory) when devices or a fabric are
	// used, and no /dev/shm volume otherwise.
	SharedMemory resource.Quantity
}

// IsZero reports whether p asks for nothing.
func (p Placement) IsZero() bool {
	return p.Profile.IsZero() && p.Accelerators == 0 && p.Fabric.IsZero() && p.SharedMemory.IsZero()
}

// Apply changes tmpl for placement p: whole-device resources on the named
// container (requests equal limits), node selectors, tolerations, the
// collective library's environment (NCCL for NVIDIA, HCCL for Ascend, the
// profile's Collective for the other vendors), the profile's host mounts,
// Ascend driver mounts when the Ascend runtime is absent, a memory-backed
// /dev/shm, IPC_LOCK for RDMA, Multus annotations and the
// ring-controller.atlas label. It never panics. It returns every problem,
// with paths under path: placement problems under path.Child("profile"),
// "accelerators", "fabric" and "sharedMemory"; template conflicts under
// path.Child("spec"…) or path.Child("metadata"…). On any problem tmpl is
// left unchanged.
func Apply(tmpl *corev1.PodTemplateSpec, container string, p Placement, path *field.Path) field.ErrorList {
	if tmpl == nil {
		return field.ErrorList{field.Required(path, "pod template must not be nil")}
	}
	errs := validatePlacement(p, path)
	out := tmpl.DeepCopy()
	idx := containerIndex(out, container)
	if idx < 0 {
		errs = append(errs, field.NotFound(path.Child("spec", "containers"), container))
	}
	if len(errs) > 0 {
		return errs
	}
	m := mutator{tmpl: out, idx: idx, path: path}
	m.apply(p)
	if len(m.errs) > 0 {
		return m.errs
	}
	*tmpl = *out
	return nil
}

// DeviceRequest is a device request that is not a whole-device Placement:
// vgpu renders slices through it so that only this package writes pod
// fields.
type DeviceRequest struct {
	// Resources are requested and limited alike on the container.
	Resources map[corev1.ResourceName]int64
	// Annotations and Labels are set on the pod template; a different
	// existing value is a conflict.
	Annotations, Labels map[string]string
	// NodeSelector entries replace existing ones with the same key: a slice
	// may narrow what its profile selected (a single-strategy MIG product).
	NodeSelector map[string]string
	// Env is set on the container, replacing variables of the same name.
	Env []corev1.EnvVar
}

// ApplyDevices sets r on the named container of tmpl. Like Apply it never
// panics, reports every problem under path and leaves tmpl unchanged on
// error.
func ApplyDevices(tmpl *corev1.PodTemplateSpec, container string, r DeviceRequest, path *field.Path) field.ErrorList {
	if tmpl == nil {
		return field.ErrorList{field.Required(path, "pod template must not be nil")}
	}
	out := tmpl.DeepCopy()
	idx := containerIndex(out, container)
	if idx < 0 {
		return field.ErrorList{field.NotFound(path.Child("spec", "containers"), container)}
	}
	m := mutator{tmpl: out, idx: idx, path: path}
	for _, name := range sortedKeys(r.Resources) {
		m.setResource(name, r.Resources[name])
	}
	for _, k := range sortedKeys(r.NodeSelector) {
		if out.Spec.NodeSelector == nil {
			out.Spec.NodeSelector = map[string]string{}
		}
		out.Spec.NodeSelector[k] = r.NodeSelector[k]
	}
	for _, k := range sortedKeys(r.Annotations) {
		m.setAnnotation(k, r.Annotations[k])
	}
	for _, k := range sortedKeys(r.Labels) {
		m.setLabel(k, r.Labels[k])
	}
	m.setEnv(r.Env...)
	if len(m.errs) > 0 {
		return m.errs
	}
	*tmpl = *out
	return nil
}

func validatePlacement(p Placement, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if p.IsZero() {
		return nil
	}
	prof := p.Profile
	profPath := path.Child("profile")
	if prof.IsZero() {
		errs = append(errs, field.Required(profPath, "a hardware profile is required for devices or a fabric"))
		return errs
	}
	if !flavourSuits(prof, prof.Flavour) {
		errs = append(errs, field.NotSupported(profPath.Child("flavour"), prof.Flavour, flavoursOf(prof.Vendor)))
	}
	if (prof.Flavour == MIGSingle || prof.Flavour == MIGMixed) && !prof.HasMIG() {
		errs = append(errs, field.Invalid(profPath.Child("flavour"), prof.Flavour,
			fmt.Sprintf("%s has no MIG; use %s", prof.Name, flavoursOf(prof.Vendor)[0])))
	}
	if p.Accelerators < 0 {
		errs = append(errs, field.Invalid(path.Child("accelerators"), p.Accelerators, "must not be negative"))
	}
	if p.Accelerators > 0 {
		switch {
		case !prof.Accelerated():
			errs = append(errs, field.Invalid(path.Child("accelerators"), p.Accelerators,
				fmt.Sprintf("%s has no accelerators to request", prof.Name)))
		case prof.ResourceName == "":
			errs = append(errs, field.Required(profPath.Child("resourceName"),
				fmt.Sprintf("%s has no resource name under flavour %q; set one with Resource", prof.Name, prof.Flavour)))
		}
		if prof.Vendor == Kunlunxin && prof.Flavour == HAMi && !slices.Contains([]int{1, 2, 4, 8}, p.Accelerators) {
			// HAMi pkg/device/kunlun/topo.go places 1, 2 or 4 XPUs within
			// one group of four, or all 8; other counts are never placed.
			errs = append(errs, field.Invalid(path.Child("accelerators"), p.Accelerators,
				"HAMi places 1, 2, 4 or 8 Kunlunxin XPUs per pod"))
		}
		if prof.Accelerated() && prof.MaxPerNode < 1 {
			// Without it no count is too many: GPUs(64) would render a pod
			// no node can hold.
			errs = append(errs, field.Invalid(profPath.Child("maxPerNode"), prof.MaxPerNode,
				fmt.Sprintf("must be at least 1: how many %s devices a node holds (PerNode)", prof.Name)))
		}
		if prof.MaxPerNode > 0 && p.Accelerators > prof.MaxPerNode {
			errs = append(errs, field.Invalid(path.Child("accelerators"), p.Accelerators,
				fmt.Sprintf("more devices per pod than a %s node holds (%d)", prof.Name, prof.MaxPerNode)))
		}
	}
	if p.SharedMemory.Sign() < 0 {
		errs = append(errs, field.Invalid(path.Child("sharedMemory"), p.SharedMemory.String(), "must not be negative"))
	}
	errs = append(errs, validateFabric(prof, p.Fabric, path.Child("fabric"))...)
	return errs
}

func validateFabric(prof Profile, f Fabric, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, pr := range f.problems {
		errs = append(errs, field.Invalid(path.Child(pr.field), pr.value, pr.detail))
	}
	if f.IsZero() {
		return errs
	}
	if prof.Vendor == Huawei {
		for _, o := range uniq(f.ncclOptions) {
			errs = append(errs, field.Forbidden(path.Child(o),
				fmt.Sprintf("%s collectives use HCCL; NCCL settings do not apply", prof.Name)))
		}
		switch {
		case f.kind == FabricInfiniBand:
			errs = append(errs, field.Invalid(path.Child("kind"), f.kind,
				fmt.Sprintf("%s has no InfiniBand; Ascend NPUs talk RoCE over their own ports", prof.Name)))
		case f.kind == FabricRoCE && !prof.OnChipRoCE:
			errs = append(errs, field.Invalid(path.Child("kind"), f.kind,
				fmt.Sprintf("%s has no RoCE ports; use TCP", prof.Name)))
		}
		for _, o := range uniq(f.rdmaOptions) {
			errs = append(errs, field.Forbidden(path.Child(o),
				fmt.Sprintf("%s nodes talk over the NPUs' own RoCE ports; RDMA device plugins and Multus networks do not apply", prof.Name)))
		}
		return errs
	}
	if !prof.Accelerated() {
		if f.RDMA() {
			errs = append(errs, field.Invalid(path.Child("kind"), f.kind,
				fmt.Sprintf("%s has no accelerators, so no collective library to carry over RDMA; use TCP or an accelerator profile", prof.Name)))
		}
		for _, o := range append(uniq(f.ncclOptions), uniq(f.hcclOptions)...) {
			errs = append(errs, field.Forbidden(path.Child(o),
				fmt.Sprintf("%s has no accelerators; collective library settings do not apply", prof.Name)))
		}
		return errs
	}
	c := prof.Collective()
	lib := c.Name
	if lib == "" {
		lib = "its collective library"
	}
	for _, o := range uniq(f.hcclOptions) {
		errs = append(errs, field.Forbidden(path.Child(o),
			fmt.Sprintf("%s collectives use %s; HCCL settings do not apply", prof.Name, lib)))
	}
	for _, o := range uniq(f.ncclOptions) {
		if collectiveVar(c, o) == "" {
			errs = append(errs, field.Forbidden(path.Child(o),
				fmt.Sprintf("%s has no known equivalent of NCCL's %s; set the variable with Env, or its name with UseCollective", lib, ncclVar(o))))
		}
	}
	if f.RDMA() && f.rdmaResource == "" {
		errs = append(errs, field.Required(path.Child("rdmaResource"),
			"an RDMA fabric needs an RDMA device resource (RDMASharedDevice or SRIOV)"))
	}
	return errs
}

// mutator writes a placement into a pod template copy, collecting conflicts.
type mutator struct {
	tmpl *corev1.PodTemplateSpec
	idx  int
	path *field.Path
	errs field.ErrorList
}

func (m *mutator) container() *corev1.Container { return &m.tmpl.Spec.Containers[m.idx] }

func (m *mutator) containerPath() *field.Path {
	return m.path.Child("spec", "containers").Index(m.idx)
}

func (m *mutator) apply(p Placement) {
	if p.IsZero() {
		return
	}
	prof, f := p.Profile, p.Fabric
	huawei := prof.Vendor == Huawei && prof.Flavour == HuaweiDevicePlugin

	// Devices.
	if p.Accelerators > 0 {
		m.setResource(prof.ResourceName, int64(p.Accelerators))
		if prof.Flavour == HAMi {
			extras := HAMiWholeResources(prof, int64(p.Accelerators))
			for _, name := range sortedKeys(extras) {
				m.setResource(name, extras[name])
			}
		}
	}
	if f.RDMA() && prof.Vendor != Huawei {
		m.setResource(f.rdmaResource, f.rdmaCount)
	}

	// Node placement.
	selector := nodeSelectorFor(prof)
	for _, k := range sortedKeys(selector) {
		m.setNodeSelector(k, selector[k])
	}
	for _, t := range prof.tolerations {
		if !slices.ContainsFunc(m.tmpl.Spec.Tolerations, func(have corev1.Toleration) bool { return equality.Semantic.DeepEqual(have, t) }) {
			m.tmpl.Spec.Tolerations = append(m.tmpl.Spec.Tolerations, t)
		}
	}
	if prof.Vendor == NVIDIA && prof.Flavour == HAMi && prof.HAMiType != "" {
		m.setAnnotation(AnnotationHAMiGPUType, prof.HAMiType)
	}

	// Ascend runtime pieces.
	if huawei {
		if prof.RingController != "" {
			m.setLabel(LabelRingController, prof.RingController)
		}
		if p.Accelerators > 0 && prof.VisibleDevicesFromAnnotation {
			m.setEnv(corev1.EnvVar{Name: "ASCEND_VISIBLE_DEVICES", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1",
					FieldPath: fmt.Sprintf("metadata.annotations['%s']", prof.ResourceName)},
			}})
		}
	}
	if prof.Accelerated() {
		// Like the Ascend driver paths: slices applied after Apply need
		// the driver too.
		for _, hm := range prof.hostMounts {
			m.hostPathMount(ascendDriverMount{volume: hm.Volume, path: hm.Path, fileType: hm.Type})
		}
	}
	if prof.Vendor == Huawei && !prof.AscendRuntime {
		for _, dm := range ascendDriverMounts {
			m.hostPathMount(dm)
		}
		if !f.IsZero() {
			for _, dm := range ascendNetworkMounts {
				m.hostPathMount(dm)
			}
		}
	}

	// Collective library.
	if !f.IsZero() {
		switch prof.Vendor {
		case NoAccelerator:
		case Huawei:
			m.setEnv(f.hcclEnv()...)
		default:
			m.setEnv(f.collectiveEnv(prof.Collective())...)
		}
		if f.RDMA() && prof.Vendor != Huawei {
			m.addCapability("IPC_LOCK")
		}
		if len(f.networks) > 0 {
			m.mergeNetworks(f.networks)
		}
	}

	// Shared memory.
	if size, ok := sharedMemorySize(p); ok {
		m.sharedMemory(size)
	}
}

// nodeSelectorFor is what a profile selects under its flavour. Under the
// single MIG strategy the product label carries a MIG suffix, so the
// profile selects the strategy and leaves the product to the MIG slice.
func nodeSelectorFor(prof Profile) map[string]string {
	sel := maps.Clone(prof.nodeLabels)
	if sel == nil {
		sel = map[string]string{}
	}
	if prof.Arch != "" {
		if _, ok := sel[LabelArch]; !ok {
			sel[LabelArch] = prof.Arch
		}
	}
	if prof.Vendor == NVIDIA && prof.Flavour == MIGSingle {
		delete(sel, LabelGPUProduct)
		sel[LabelMIGStrategy] = "single"
	}
	return sel
}

// sharedMemorySize is the /dev/shm size for p and whether to mount it.
func sharedMemorySize(p Placement) (resource.Quantity, bool) {
	if !p.SharedMemory.IsZero() {
		return p.SharedMemory.DeepCopy(), true
	}
	devices := p.Accelerators > 0 && p.Profile.Accelerated()
	if !devices && p.Fabric.IsZero() {
		return resource.Quantity{}, false
	}
	size := MinSharedMemory.DeepCopy()
	if devices {
		per := DefaultSharedMemoryPerDevice.DeepCopy()
		total := resource.NewQuantity(per.Value()*int64(p.Accelerators), resource.BinarySI)
		if total.Cmp(size) > 0 {
			size = *total
		}
	}
	return size, true
}

func (m *mutator) setResource(name corev1.ResourceName, n int64) {
	c := m.container()
	q := *resource.NewQuantity(n, resource.DecimalSI)
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	c.Resources.Limits[name] = q
	c.Resources.Requests[name] = q.DeepCopy()
}

func (m *mutator) setNodeSelector(k, v string) {
	m.setKey(&m.tmpl.Spec.NodeSelector, m.path.Child("spec", "nodeSelector"), k, v, "the hardware profile")
}

func (m *mutator) setAnnotation(k, v string) {
	m.setKey(&m.tmpl.Annotations, m.path.Child("metadata", "annotations"), k, v, "the hardware")
}

func (m *mutator) setLabel(k, v string) {
	m.setKey(&m.tmpl.Labels, m.path.Child("metadata", "labels"), k, v, "the hardware")
}

// setKey sets k=v in *dst; a different existing value is a conflict.
func (m *mutator) setKey(dst *map[string]string, p *field.Path, k, v, owner string) {
	if have, ok := (*dst)[k]; ok && have != v {
		m.errs = append(m.errs, field.Invalid(p.Key(k), have, fmt.Sprintf("conflicts with %q required by %s", v, owner)))
		return
	}
	if *dst == nil {
		*dst = map[string]string{}
	}
	(*dst)[k] = v
}

// setEnv sets variables on the container, replacing any of the same name.
func (m *mutator) setEnv(vars ...corev1.EnvVar) {
	c := m.container()
	for _, v := range vars {
		v = *v.DeepCopy()
		if i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == v.Name }); i >= 0 {
			c.Env[i] = v
			continue
		}
		c.Env = append(c.Env, v)
	}
}

func (m *mutator) addCapability(capability corev1.Capability) {
	c := m.container()
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	if c.SecurityContext.Capabilities == nil {
		c.SecurityContext.Capabilities = &corev1.Capabilities{}
	}
	if !slices.Contains(c.SecurityContext.Capabilities.Add, capability) {
		c.SecurityContext.Capabilities.Add = append(c.SecurityContext.Capabilities.Add, capability)
	}
}

func (m *mutator) mergeNetworks(networks []string) {
	have := m.tmpl.Annotations[AnnotationMultus]
	if strings.HasPrefix(strings.TrimSpace(have), "[") {
		m.errs = append(m.errs, field.Invalid(m.path.Child("metadata", "annotations").Key(AnnotationMultus), have,
			"a JSON network list cannot be merged with the fabric's networks; give them all as Networks"))
		return
	}
	var list []string
	for _, n := range strings.Split(have, ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(list, n) {
			list = append(list, n)
		}
	}
	for _, n := range networks {
		if !slices.Contains(list, n) {
			list = append(list, n)
		}
	}
	if m.tmpl.Annotations == nil {
		m.tmpl.Annotations = map[string]string{}
	}
	m.tmpl.Annotations[AnnotationMultus] = strings.Join(list, ",")
}

// addVolume adds v unless an identical volume of the same name exists; a
// different one is a conflict.
func (m *mutator) addVolume(v corev1.Volume) bool {
	for i, have := range m.tmpl.Spec.Volumes {
		if have.Name != v.Name {
			continue
		}
		if equality.Semantic.DeepEqual(have, v) {
			return true
		}
		m.errs = append(m.errs, field.Duplicate(m.path.Child("spec", "volumes").Index(i).Child("name"), v.Name))
		return false
	}
	m.tmpl.Spec.Volumes = append(m.tmpl.Spec.Volumes, v)
	return true
}

// addMount mounts a volume unless the same mount exists; another volume at
// the same path is a conflict.
func (m *mutator) addMount(vm corev1.VolumeMount) {
	c := m.container()
	for i, have := range c.VolumeMounts {
		if have.MountPath != vm.MountPath {
			continue
		}
		if equality.Semantic.DeepEqual(have, vm) {
			return
		}
		m.errs = append(m.errs, field.Duplicate(m.containerPath().Child("volumeMounts").Index(i).Child("mountPath"), vm.MountPath))
		return
	}
	c.VolumeMounts = append(c.VolumeMounts, vm)
}

func (m *mutator) hostPathMount(dm ascendDriverMount) {
	t := dm.fileType
	ok := m.addVolume(corev1.Volume{Name: dm.volume, VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: dm.path, Type: &t},
	}})
	if ok {
		m.addMount(corev1.VolumeMount{Name: dm.volume, MountPath: dm.path, ReadOnly: true})
	}
}

func (m *mutator) sharedMemory(size resource.Quantity) {
	ok := m.addVolume(corev1.Volume{Name: SharedMemoryVolume, VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size},
	}})
	if ok {
		m.addMount(corev1.VolumeMount{Name: SharedMemoryVolume, MountPath: SharedMemoryPath})
	}
}

func containerIndex(tmpl *corev1.PodTemplateSpec, name string) int {
	return slices.IndexFunc(tmpl.Spec.Containers, func(c corev1.Container) bool { return c.Name == name })
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

func uniq(s []string) []string {
	var out []string
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// DropAnnotationVisibleDevices removes from every container of tmpl the
// ASCEND_VISIBLE_DEVICES that Apply reads from the huawei.com/Ascend...
// pod annotation (Profile.VisibleDevicesFromAnnotation). Only Volcano
// with Huawei's scheduler plugin writes that annotation: on a pod another
// scheduler places, the variable resolves to "" and, being in the pod
// spec, overrides the ASCEND_VISIBLE_DEVICES the Ascend device plugin
// returns from Allocate (mind-cluster component/ascend-device-plugin/pkg/
// common/utils.go SetAscendRuntimeEnv). pod.Builder.Template calls it for
// every template that Volcano does not schedule (its schedulerName, or
// TemplateOptions.ScheduledByVolcano for the gang-scheduled jobs whose
// operator sets the scheduler later); Apply cannot tell, for that reason.
func DropAnnotationVisibleDevices(tmpl *corev1.PodTemplateSpec) {
	if tmpl == nil {
		return
	}
	for i := range tmpl.Spec.Containers {
		c := &tmpl.Spec.Containers[i]
		c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == "ASCEND_VISIBLE_DEVICES" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
				strings.HasPrefix(e.ValueFrom.FieldRef.FieldPath, "metadata.annotations[")
		})
		if len(c.Env) == 0 {
			c.Env = nil
		}
	}
}
