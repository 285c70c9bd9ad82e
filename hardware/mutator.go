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
	if p.Accelerators > 0 && prof.DRA() {
		m.applyClaim(p.Claim)
	} else if p.Accelerators > 0 {
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
	if prof.DRA() {
		// The claim's selectors choose the card and the scheduler the
		// node that has it; GPU Feature Discovery need not run.
		delete(sel, LabelGPUProduct)
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
