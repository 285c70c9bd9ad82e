package vgpu

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
)

// request renders the spec as a device request. It returns every problem
// with paths under path.
func (s *Spec) request(path *field.Path) (hardware.DeviceRequest, field.ErrorList) {
	d, errs := s.demand(path)
	if len(errs) > 0 {
		return hardware.DeviceRequest{}, errs
	}
	p := s.profile
	if p.DRA() {
		return s.claimRequest(path, d)
	}
	n := int64(s.devices)
	r := hardware.DeviceRequest{Resources: map[corev1.ResourceName]int64{}}
	switch s.kind {
	case KindWhole:
		if s.effectiveBackend() == HAMi {
			hami := hamiProfile(p)
			r.Resources[hami.ResourceName] = n
			for name, v := range hardware.HAMiWholeResources(hami, n) {
				r.Resources[name] = v
			}
		} else {
			r.Resources[p.ResourceName] = n
		}
	case KindMIG:
		if s.strategy == Single {
			r.Resources[hardware.ResourceNVIDIAGPU] = n
			r.NodeSelector = map[string]string{
				hardware.LabelGPUProduct:  p.Product + "-MIG-" + d.mig.Name,
				hardware.LabelMIGStrategy: string(Single),
			}
		} else {
			r.Resources[d.mig.ResourceName()] = n
		}
	case KindSlice, KindVNPU:
		switch {
		case p.Vendor != hardware.NVIDIA && p.Vendor != hardware.Huawei:
			s.hamiSliceRequest(r.Resources, d)
		case p.Vendor == hardware.Huawei && s.effectiveBackend() == HAMi:
			base := "huawei.com/" + p.HAMiType
			r.Resources[corev1.ResourceName(base)] = n
			r.Resources[corev1.ResourceName(base+"-memory")] = d.tmpl.MemoryMiB
		case p.Vendor == hardware.Huawei:
			r.Resources[corev1.ResourceName("huawei.com/"+p.HuaweiType+"-"+d.tmpl.StaticType())] = 1
		case s.effectiveBackend() == Volcano:
			r.Resources[ResourceVolcanoNumber] = n
			if s.memPct > 0 {
				r.Resources[ResourceVolcanoMemPct] = int64(s.memPct)
			} else {
				r.Resources[ResourceVolcanoMemory] = ceilMiB(d.memBytes)
			}
			if s.coresSet {
				r.Resources[ResourceVolcanoCores] = int64(s.cores)
			}
			if p.HAMiType != "" {
				r.Annotations = map[string]string{AnnotationUseGPUType: p.HAMiType}
			}
		default:
			r.Resources[hardware.ResourceNVIDIAGPU] = n
			switch {
			case s.memPct > 0:
				r.Resources[ResourceGPUMemPercentage] = int64(s.memPct)
			case s.memory != "":
				r.Resources[ResourceGPUMem] = ceilMiB(d.memBytes)
			}
			if s.coresSet {
				r.Resources[ResourceGPUCores] = int64(s.cores)
			}
			if p.HAMiType != "" {
				r.Annotations = map[string]string{AnnotationUseGPUType: p.HAMiType}
			}
		}
	}
	return r, nil
}

// apply sets the spec's resources, annotations and node selectors on the
// named container of tmpl (through hardware.ApplyDevices). Call it after
// hardware.Apply with a Placement whose Count is 0, which supplies the
// profile's node selectors, environment and mounts. It never panics,
// reports every problem under path and leaves tmpl unchanged on error.
func (s *Spec) apply(tmpl *corev1.PodTemplateSpec, container string, path *field.Path) field.ErrorList {
	r, errs := s.request(path)
	if len(errs) > 0 {
		return errs
	}
	return hardware.ApplyDevices(tmpl, container, r, path)
}

func ceilMiB(b int64) int64 { return (b + mib - 1) / mib }

// hamiSliceRequest writes a valid HAMi slice of a vendor other than NVIDIA
// and Ascend into res.
func (s *Spec) hamiSliceRequest(res map[corev1.ResourceName]int64, d demandShape) {
	sl, _ := s.profile.HAMiSlicing()
	if sl.Count != "" {
		res[sl.Count] = int64(s.devices)
	}
	if s.memory != "" || s.memPct > 0 {
		res[sl.Memory] = d.memBytes / (sl.MemoryUnitMiB * mib)
	}
	if s.coresSet && sl.Cores != "" {
		res[sl.Cores] = int64((s.cores*sl.CoreUnits + 99) / 100)
	}
}
