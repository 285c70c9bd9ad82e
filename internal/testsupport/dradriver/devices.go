package dradriver

import (
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"github.com/cubestudio/cube/hardware"
)

// The node's fake devices.
const (
	// T4s is how many Tesla T4 GPUs the driver publishes (gpu-0…gpu-3).
	T4s = 4
	// T4Product is the productName NVML reports for a T4, as the driver
	// publishes it.
	T4Product = "Tesla T4"
	// A100Device is the partitionable A100's whole-GPU device; its MIG
	// devices are named A100Device + "-mig-<profile>-<start>".
	A100Device  = "gpu-4"
	A100Product = "NVIDIA A100-SXM4-80GB"
	// CounterSet is the A100's shared counters: memory-slice-0…7.
	CounterSet = "gpu-4-counters"
)

// T4Memory is what NVML reports for a T4 (15360 MiB), as hardware.T4.
var T4Memory = resource.NewQuantity(hardware.T4.MemoryBytes, resource.BinarySI)

// Resources is what the driver publishes: one pool named after the node,
// with a slice of devices and a slice of the A100's shared counters
// (a ResourceSlice holds devices or counters, not both).
func Resources(node string) resourceslice.DriverResources {
	var devices []resourcev1.Device
	for i := range T4s {
		devices = append(devices, gpu(i, T4Product, "Turing", "7.5.0", T4Memory.DeepCopy()))
	}
	a100 := gpu(4, A100Product, "Ampere", "8.0.0", *resource.NewQuantity(hardware.A100_80G.MemoryBytes, resource.BinarySI))
	a100.ConsumesCounters = []resourcev1.DeviceCounterConsumption{{CounterSet: CounterSet, Counters: memorySlices(0, hardware.MIGMemorySlices)}}
	devices = append(devices, a100)
	counters := map[string]resourcev1.Counter{}
	for i := range hardware.MIGMemorySlices {
		counters[sliceCounter(i)] = resourcev1.Counter{Value: *resource.NewQuantity(1, resource.DecimalSI)}
	}
	for _, name := range []string{"1g.10gb", "3g.40gb"} {
		m, _ := hardware.A100_80G.MIGProfile(name)
		for _, start := range m.Placements {
			devices = append(devices, mig(m, start))
		}
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		node: {Slices: []resourceslice.Slice{
			{Devices: devices},
			{SharedCounters: []resourcev1.CounterSet{{Name: CounterSet, Counters: counters}}},
		}},
	}}
}

func sliceCounter(i int) string { return fmt.Sprintf("memory-slice-%d", i) }

func memorySlices(start, n int) map[string]resourcev1.Counter {
	out := map[string]resourcev1.Counter{}
	for i := start; i < start+n; i++ {
		out[sliceCounter(i)] = resourcev1.Counter{Value: *resource.NewQuantity(1, resource.DecimalSI)}
	}
	return out
}

// attrs are the attributes every GPU and MIG device of NVIDIA's driver
// carries (deviceinfo.go GetDevice at v25.8.1).
func attrs(kind, uuid, product, arch, cc string) map[resourcev1.QualifiedName]resourcev1.DeviceAttribute {
	return map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
		hardware.AttributeType:                  {StringValue: ptr.To(kind)},
		hardware.AttributeUUID:                  {StringValue: ptr.To(uuid)},
		hardware.AttributeProductName:           {StringValue: ptr.To(product)},
		"brand":                                 {StringValue: ptr.To("Nvidia")},
		hardware.AttributeArchitecture:          {StringValue: ptr.To(arch)},
		hardware.AttributeCUDAComputeCapability: {VersionValue: ptr.To(cc)},
		hardware.AttributeDriverVersion:         {VersionValue: ptr.To("550.54.15")},
		"cudaDriverVersion":                     {VersionValue: ptr.To("12.4.0")},
	}
}

func gpu(minor int, product, arch, cc string, memory resource.Quantity) resourcev1.Device {
	return resourcev1.Device{
		Name:       fmt.Sprintf("gpu-%d", minor),
		Attributes: attrs("gpu", fmt.Sprintf("GPU-cube0000-0000-0000-0000-%012d", minor), product, arch, cc),
		Capacity:   map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{hardware.CapacityMemory: {Value: memory}},
	}
}

func mig(m hardware.MIGProfile, start int) resourcev1.Device {
	name := fmt.Sprintf("%s-mig-%s-%d", A100Device, dnsLabel(m.Name), start)
	a := attrs("mig", "MIG-cube0000-0000-0000-"+dnsLabel(m.Name)+fmt.Sprint(start), A100Product, "Ampere", "8.0.0")
	a[hardware.AttributeMIGProfile] = resourcev1.DeviceAttribute{StringValue: ptr.To(m.Name)}
	a[hardware.AttributeParentUUID] = resourcev1.DeviceAttribute{StringValue: ptr.To("GPU-cube0000-0000-0000-0000-000000000004")}
	return resourcev1.Device{
		Name:       name,
		Attributes: a,
		Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
			hardware.CapacityMemory: {Value: *resource.NewQuantity(m.MemoryMiB<<20, resource.BinarySI)},
			"multiprocessors":       {Value: *resource.NewQuantity(int64(m.SMs), resource.DecimalSI)},
		},
		ConsumesCounters: []resourcev1.DeviceCounterConsumption{{CounterSet: CounterSet, Counters: memorySlices(start, m.MemorySlices)}},
	}
}

// dnsLabel spells a MIG profile as part of a device name: 1g.10gb → 1g10gb.
func dnsLabel(s string) string {
	out := []byte{}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			out = append(out, c)
		}
	}
	return string(out)
}

// DeviceClasses are the classes NVIDIA's chart installs
// (deployments/helm/nvidia-dra-driver-gpu/templates/deviceclass-gpu.yaml
// and deviceclass-mig.yaml at v25.8.1), with the same selectors.
func DeviceClasses() []*resourcev1.DeviceClass {
	class := func(name, kind string) *resourcev1.DeviceClass {
		return &resourcev1.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
				Expression: fmt.Sprintf("device.driver == '%s' && device.attributes['%s'].type == '%s'", hardware.DriverNVIDIAGPU, hardware.DriverNVIDIAGPU, kind),
			}}}},
		}
	}
	return []*resourcev1.DeviceClass{class(hardware.DeviceClassNVIDIAGPU, "gpu"), class(hardware.DeviceClassNVIDIAMIG, "mig")}
}
