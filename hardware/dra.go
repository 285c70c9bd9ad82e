package hardware

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Dynamic Resource Allocation (resource.k8s.io/v1) names, read from the
// drivers' source:
//
//   - NVIDIA's DRA driver for GPUs, github.com/NVIDIA/k8s-dra-driver-gpu at
//     v25.8.1 (commit fc69d98528027bfe06efff81e6fd99c98ede8ff7): the driver
//     name gpu.nvidia.com (cmd/gpu-kubelet-plugin/main.go DriverName), the
//     device types "gpu" and "mig" (cmd/gpu-kubelet-plugin/types.go), the
//     device classes gpu.nvidia.com and mig.nvidia.com selecting
//     device.attributes['gpu.nvidia.com'].type (deployments/helm/
//     nvidia-dra-driver-gpu/templates/deviceclass-gpu.yaml,
//     deviceclass-mig.yaml), and the attributes and capacities of a GPU and
//     a MIG device (cmd/gpu-kubelet-plugin/deviceinfo.go GetDevice: type,
//     uuid, productName, brand, architecture, cudaComputeCapability,
//     driverVersion, cudaDriverVersion, pcieBusID; a MIG device adds
//     parentUUID and profile; capacity memory, and for MIG
//     multiprocessors).
//   - HAMi's DRA driver, github.com/Project-HAMi/k8s-dra-driver at v0.1.0
//     (commit ebeaad97463a2af48dcc5f5a2603f65eaf792da8): the driver and
//     device class hami-core-gpu.project-hami.io (cmd/hami-kubelet-plugin/
//     main.go DriverName; chart/hami-dra-driver/templates/
//     deviceclass-hami-gpu.yaml), the device type "hami-gpu" and the
//     consumable capacities cores (percent, 0–100) and memory (bytes) of a
//     device that allows multiple allocations (cmd/hami-kubelet-plugin/
//     hami_core.go GetDevice).
const (
	// DriverNVIDIAGPU is the driver name of NVIDIA's DRA driver, and the
	// domain of its device attributes.
	DriverNVIDIAGPU = "gpu.nvidia.com"
	// DeviceClassNVIDIAGPU selects whole GPUs of NVIDIA's DRA driver.
	DeviceClassNVIDIAGPU = "gpu.nvidia.com"
	// DeviceClassNVIDIAMIG selects MIG devices of NVIDIA's DRA driver.
	DeviceClassNVIDIAMIG = "mig.nvidia.com"
	// DriverHAMi is the driver name of HAMi's DRA driver (HAMi-core), the
	// domain of its device attributes, and its device class.
	DriverHAMi = "hami-core-gpu.project-hami.io"
	// DeviceClassHAMi selects HAMi's shareable GPUs.
	DeviceClassHAMi = "hami-core-gpu.project-hami.io"

	// Attributes and capacities both drivers publish under their domain.
	AttributeType                  = "type"
	AttributeUUID                  = "uuid"
	AttributeProductName           = "productName"
	AttributeArchitecture          = "architecture"
	AttributeCUDAComputeCapability = "cudaComputeCapability"
	AttributeDriverVersion         = "driverVersion"
	// AttributeMIGProfile is the MIG profile of a MIG device ("1g.10gb").
	AttributeMIGProfile = "profile"
	// AttributeParentUUID is the GPU a MIG device belongs to.
	AttributeParentUUID = "parentUUID"
	// CapacityMemory is a device's memory in bytes; HAMi's is consumable.
	CapacityMemory = "memory"
	// CapacityCores is HAMi's consumable compute share, in percent.
	CapacityCores = "cores"

	// ClaimName is the name under which a pod refers to the claim of its
	// accelerators (spec.resourceClaims[].name and the container's
	// resources.claims[].name), and the name of the request in the claim.
	ClaimName = "accelerators"
)

// DRA reports whether p's flavour is a Dynamic Resource Allocation driver
// (NVIDIADRA or HAMiDRA): its devices come from a ResourceClaim, not from
// an extended resource.
func (p Profile) DRA() bool { return p.Flavour == NVIDIADRA || p.Flavour == HAMiDRA }

// ClaimRef names the object a pod's DRA devices come from: a
// ResourceClaimTemplate, from which every pod gets a claim of its own, or,
// Shared, one ResourceClaim all the pods of a group use together (they
// then share its devices and run on the node that holds them).
type ClaimRef struct {
	// Name of the ResourceClaimTemplate, or of the ResourceClaim when
	// Shared.
	Name   string
	Shared bool
}

// IsZero reports whether r names nothing.
func (r ClaimRef) IsZero() bool { return r.Name == "" && !r.Shared }

// DeviceClaim is the device request of a DRA flavour: what one claim asks
// of the drivers. Spec renders it; Apply and ApplyDevices make the pod
// refer to it.
type DeviceClaim struct {
	ClaimRef
	// Class is the DeviceClass (DeviceClassNVIDIAGPU…).
	Class string
	// Count of devices, all alike.
	Count int64
	// Selectors are CEL expressions every device must satisfy, on the
	// attributes and capacities the driver publishes.
	Selectors []string
	// Capacity is what the request consumes of each device's consumable
	// capacities (HAMi's memory and cores).
	Capacity map[resourcev1.QualifiedName]resource.Quantity
}

// Spec renders c as the spec of a ResourceClaim (or of the claims a
// ResourceClaimTemplate makes): one request named ClaimName, exactly Count
// devices of Class, with c's selectors and capacity. Each call returns
// fresh values.
func (c DeviceClaim) Spec() resourcev1.ResourceClaimSpec {
	req := resourcev1.ExactDeviceRequest{
		DeviceClassName: c.Class,
		AllocationMode:  resourcev1.DeviceAllocationModeExactCount,
		Count:           c.Count,
	}
	for _, s := range c.Selectors {
		req.Selectors = append(req.Selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: s}})
	}
	if len(c.Capacity) > 0 {
		req.Capacity = &resourcev1.CapacityRequirements{Requests: map[resourcev1.QualifiedName]resource.Quantity{}}
		for _, k := range slices.Sorted(maps.Keys(c.Capacity)) {
			req.Capacity.Requests[k] = c.Capacity[k].DeepCopy()
		}
	}
	return resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{{Name: ClaimName, Exactly: &req}},
	}}
}

// WholeClaim is the claim of n whole devices of p under its DRA flavour:
// NVIDIA's GPU class (or HAMi's, whose device without capacity requests is
// the whole GPU: its request policy defaults to all memory and 100 cores),
// with a selector on the product name when p has one. ok is false when p's
// flavour is not a DRA driver.
func WholeClaim(p Profile, n int64) (c DeviceClaim, ok bool) {
	if !p.DRA() {
		return DeviceClaim{}, false
	}
	c = DeviceClaim{Class: p.DeviceClass(), Count: n}
	if sel := p.ProductSelector(); sel != "" {
		c.Selectors = []string{sel}
	}
	return c, true
}

// DeviceClass is the DeviceClass of whole devices of p under its DRA
// flavour; "" under a device plugin.
func (p Profile) DeviceClass() string {
	switch p.Flavour {
	case NVIDIADRA:
		return DeviceClassNVIDIAGPU
	case HAMiDRA:
		return DeviceClassHAMi
	}
	return ""
}

// Driver is the DRA driver of p's flavour, the domain of its device
// attributes; "" under a device plugin.
func (p Profile) Driver() string {
	switch p.Flavour {
	case NVIDIADRA:
		return DriverNVIDIAGPU
	case HAMiDRA:
		return DriverHAMi
	}
	return ""
}

// ProductSelector is the CEL expression that selects p's card by the
// productName attribute of its DRA driver; "" when p has no DRA flavour or
// no Product. The drivers publish NVML's name ("Tesla T4", "NVIDIA
// A100-SXM4-80GB"); Product is GPU Feature Discovery's label value, the same
// name with every space made a dash, so each dash of Product matches a dash
// or a space.
func (p Profile) ProductSelector() string {
	if !p.DRA() || p.Product == "" {
		return ""
	}
	parts := strings.Split(p.Product, "-")
	for i, s := range parts {
		parts[i] = regexp.QuoteMeta(s)
	}
	return fmt.Sprintf("%s.matches(%s)", AttributeExpr(p.Driver(), AttributeProductName), celString("^"+strings.Join(parts, "[- ]")+"$"))
}

// AttributeExpr is the CEL expression reading attribute name of driver
// domain: device.attributes['gpu.nvidia.com'].productName.
func AttributeExpr(driver, name string) string {
	return fmt.Sprintf("device.attributes[%s].%s", celString(driver), name)
}

// CapacityExpr is the CEL expression reading capacity name of driver
// domain: device.capacity['gpu.nvidia.com'].memory.
func CapacityExpr(driver, name string) string {
	return fmt.Sprintf("device.capacity[%s].%s", celString(driver), name)
}

// celString quotes s as a CEL string literal.
func celString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// applyClaim makes the container use the claim named by ref: the pod's
// spec.resourceClaims entry ClaimName (from the template, or the shared
// claim) and the container's resources.claims. An entry of the same name
// that differs is a conflict.
func (m *mutator) applyClaim(ref ClaimRef) {
	if ref.Name == "" {
		m.errs = append(m.errs, field.Required(m.path.Child("spec", "resourceClaims").Key(ClaimName),
			"a DRA flavour needs the name of the claim's ResourceClaimTemplate or ResourceClaim"))
		return
	}
	pc := corev1.PodResourceClaim{Name: ClaimName}
	if ref.Shared {
		pc.ResourceClaimName = &ref.Name
	} else {
		pc.ResourceClaimTemplateName = &ref.Name
	}
	spec := &m.tmpl.Spec
	if i := slices.IndexFunc(spec.ResourceClaims, func(c corev1.PodResourceClaim) bool { return c.Name == ClaimName }); i >= 0 {
		have := spec.ResourceClaims[i]
		if !samePtr(have.ResourceClaimName, pc.ResourceClaimName) || !samePtr(have.ResourceClaimTemplateName, pc.ResourceClaimTemplateName) {
			m.errs = append(m.errs, field.Duplicate(m.path.Child("spec", "resourceClaims").Index(i).Child("name"), ClaimName))
		}
		return
	}
	spec.ResourceClaims = append(spec.ResourceClaims, pc)
	c := m.container()
	if !slices.ContainsFunc(c.Resources.Claims, func(rc corev1.ResourceClaim) bool { return rc.Name == ClaimName }) {
		c.Resources.Claims = append(c.Resources.Claims, corev1.ResourceClaim{Name: ClaimName})
	}
}

func samePtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
