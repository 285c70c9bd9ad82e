// Package vgpu describes fractional accelerators and packs them onto
// devices.
//
// A Spec is a share of a device: a HAMi or Volcano slice sized by memory
// and compute, a MIG instance, or an Ascend vNPU template.
//
//	s := vgpu.Slice(hardware.A100_80G).Memory("10Gi").Cores(30)
//	errs := s.Apply(&tmpl, "main", field.NewPath("spec", "template"))
//
// Apply renders the spec through hardware.ApplyDevices; call it after
// hardware.Apply with Placement.Count 0 so the profile still supplies node
// selectors, environment and mounts.
//
// The planner (Plan) assigns demands to the devices of a
// hardware.Inventory, respecting MIG placement geometry and both memory
// and compute of slices, and compares itself with whole-device
// allocation, first-fit, HAMi-style binpack and spread.
package vgpu
