package vgpu

import (
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
)

// claimRequest renders a valid spec whose profile has a DRA flavour
// (hardware.NVIDIADRA, hardware.HAMiDRA) as a device claim: whole devices
// of the driver's GPU class; a MIG instance of NVIDIA's mig.nvidia.com
// class selected by its profile attribute; a slice as HAMi's consumable
// memory and cores capacities. Attribute, capacity and class names are
// hardware's, read from the drivers' source (see hardware.DriverNVIDIAGPU).
func (s *Spec) claimRequest(path *field.Path, d demandShape) (hardware.DeviceRequest, field.ErrorList) {
	p := s.profile
	n := int64(s.devices)
	if s.backend != "" && s.backend != HAMi && s.backend != DevicePlugin {
		return hardware.DeviceRequest{}, field.ErrorList{field.Invalid(path.Child("backend"), s.backend,
			fmt.Sprintf("the profile's flavour %s is a DRA driver: it shares devices itself; drop Backend", p.Flavour))}
	}
	switch s.kind {
	case KindWhole:
		c, _ := hardware.WholeClaim(p, n)
		return hardware.DeviceRequest{Claim: &c}, nil
	case KindMIG:
		if p.Flavour != hardware.NVIDIADRA {
			return hardware.DeviceRequest{}, field.ErrorList{field.Invalid(path.Child("profile", "flavour"), p.Flavour,
				"HAMi's DRA driver class selects shared GPUs, not MIG devices: use hardware.NVIDIADRA")}
		}
		if s.strategy == Single {
			return hardware.DeviceRequest{}, field.ErrorList{field.Invalid(path.Child("strategy"), s.strategy,
				"MIG strategies are the device plugin's; NVIDIA's DRA driver offers every MIG device by its profile")}
		}
		sel := []string{fmt.Sprintf("%s == '%s'", hardware.AttributeExpr(hardware.DriverNVIDIAGPU, hardware.AttributeMIGProfile), d.mig.Name)}
		if ps := p.ProductSelector(); ps != "" {
			sel = append(sel, ps)
		}
		return hardware.DeviceRequest{Claim: &hardware.DeviceClaim{Class: hardware.DeviceClassNVIDIAMIG, Count: n, Selectors: sel}}, nil
	case KindSlice:
		if p.Flavour != hardware.HAMiDRA {
			return hardware.DeviceRequest{}, field.ErrorList{field.Invalid(path.Child("profile", "flavour"), p.Flavour,
				"NVIDIA's DRA driver does not divide a GPU by memory or cores: use hardware.HAMiDRA, or a MIG spec")}
		}
		c, _ := hardware.WholeClaim(p, n)
		c.Capacity = map[resourcev1.QualifiedName]resource.Quantity{}
		if s.memory != "" || s.memPct > 0 {
			c.Capacity[hardware.CapacityMemory] = *resource.NewQuantity(d.memBytes, resource.BinarySI)
		}
		if s.coresSet {
			c.Capacity[hardware.CapacityCores] = *resource.NewQuantity(int64(s.cores), resource.DecimalSI)
		}
		return hardware.DeviceRequest{Claim: &c}, nil
	}
	return hardware.DeviceRequest{}, field.ErrorList{field.Invalid(path.Child("profile", "flavour"), p.Flavour,
		fmt.Sprintf("a %s spec has no DRA rendering", s.kind))}
}
