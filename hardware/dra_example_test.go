package hardware_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
)

// Under a DRA flavour a pod's devices come from a claim: Apply makes the
// container use the claim the Placement names, and WholeClaim is what the
// ResourceClaimTemplate of that name asks of NVIDIA's DRA driver.
func ExampleWholeClaim() {
	t4 := hardware.T4.Plugin(hardware.NVIDIADRA)
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "pytorch:2.4"}}}}
	errs := hardware.Apply(&tmpl, "main", hardware.Placement{
		Profile: t4, Accelerators: 2, Claim: hardware.ClaimRef{Name: "train-accelerators"},
	}, field.NewPath("spec", "template"))
	fmt.Println(errs)
	printYAML(tmpl.Spec.ResourceClaims)
	printYAML(tmpl.Spec.Containers[0].Resources)
	c, _ := hardware.WholeClaim(t4, 2)
	printYAML(c.Spec())
	// Output:
	// []
	// - name: accelerators
	//   resourceClaimTemplateName: train-accelerators
	// claims:
	// - name: accelerators
	// devices:
	//   requests:
	//   - exactly:
	//       allocationMode: ExactCount
	//       count: 2
	//       deviceClassName: gpu.nvidia.com
	//       selectors:
	//       - cel:
	//           expression: device.attributes['gpu.nvidia.com'].productName.matches('^Tesla[-
	//             ]T4$')
	//     name: accelerators
}

// A profile under a device plugin has no claim.
func ExampleProfile_DRA() {
	fmt.Println(hardware.H100.DRA(), hardware.H100.Plugin(hardware.NVIDIADRA).DRA(), hardware.H100.Plugin(hardware.HAMiDRA).DeviceClass())
	// Output: false true hami-core-gpu.project-hami.io
}
