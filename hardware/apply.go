package hardware

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
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
	// Claim names the ResourceClaimTemplate (or shared ResourceClaim) the
	// devices come from when the profile's flavour is a DRA driver
	// (Profile.DRA); WholeClaim is what that object must ask for. It is
	// ignored under a device plugin.
	Claim ClaimRef
}

// IsZero reports whether p asks for nothing.
func (p Placement) IsZero() bool {
	return p.Profile.IsZero() && p.Accelerators == 0 && p.Fabric.IsZero() && p.SharedMemory.IsZero() && p.Claim.IsZero()
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
	// Claim, under a DRA flavour, makes the pod use the claim its
	// ClaimRef names (the object rendered from Claim.Spec) in place of
	// Resources.
	Claim *DeviceClaim
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
	if r.Claim != nil {
		m.applyClaim(r.Claim.ClaimRef)
	}
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
		case prof.ResourceName == "" && !prof.DRA():
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
