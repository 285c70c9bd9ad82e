package serve

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/podspec"
)

// checkHardware reports an engine on hardware it does not run on.
func (s *Service) checkHardware(r *rendering) field.ErrorList {
	e := s.engine
	on := field.NewPath("spec", "on")
	accelerated := r.hasProfile && r.profile.Accelerated()
	switch {
	case !e.cpu && !e.nvidia && (!accelerated || r.profile.Vendor != hardware.Huawei):
		return field.ErrorList{field.Required(on, e.title+" runs on Ascend NPUs: call On(hardware.Ascend910B3) or another 910B profile")}
	case !accelerated && e.gpuImage && podspec.Of(&s.Handle).ImageName() == "" && podspec.Of(&s.Handle).GPUCount() == 0 && s.auto == nil:
		// (GPUs and Auto without a profile are reported as a missing On.)
		return field.ErrorList{field.Required(field.NewPath("spec", "image"),
			fmt.Sprintf("the default %s image is built for GPUs: call On with an accelerator, or set Image to a CPU build", e.title))}
	case !accelerated:
		return nil
	case r.profile.Vendor == hardware.Huawei && !e.ascend:
		return field.ErrorList{field.Invalid(on, r.profile.Name, e.title+" does not run on Ascend NPUs; use MindIE or vLLM")}
	case r.profile.Vendor == hardware.Huawei && e.ascendImage == "" && podspec.Of(&s.Handle).ImageName() == "":
		return field.ErrorList{field.Required(field.NewPath("spec", "image"),
			fmt.Sprintf("cube pins no %s image for Ascend NPUs: set Image", e.title))}
	case r.profile.Vendor == hardware.NVIDIA && !e.nvidia:
		return field.ErrorList{field.Invalid(on, r.profile.Name, e.title+" does not run on NVIDIA GPUs")}
	case r.profile.Vendor != hardware.NVIDIA && r.profile.Vendor != hardware.Huawei && podspec.Of(&s.Handle).ImageName() == "" && e.defaultImage(r) == "":
		// The engine's default image is a CUDA build: on Hygon, Cambricon,
		// Kunlunxin, MetaX and the other vendors' devices it finds no
		// device and fails, or serves on the CPU.
		return field.ErrorList{field.Required(field.NewPath("spec", "image"),
			fmt.Sprintf("cube knows no %s image for %s %s devices (%s): set Image to a %s build for them",
				e.title, r.profile.Vendor, r.profile.Name, e.vendorHint(), e.title))}
	}
	return nil
}

// vendorHint says where a vendor image for the engine would come from.
func (e *engine) vendorHint() string {
	if e.vendorFramework == "" {
		return "its images are built for NVIDIA GPUs and CPUs only"
	}
	return "the profile has no " + string(e.vendorFramework) + " image; hardware.Profile.UseImages sets one"
}

// defaultImage is the engine's image for the profile: its CUDA (or CPU)
// image on NVIDIA GPUs and nodes without accelerators, its Ascend image on
// Ascend NPUs, and on other vendors' devices the vendor's build the
// hardware catalogue knows (hardware.Profile.Image), or "" when there is
// none.
func (e *engine) defaultImage(r *rendering) string {
	if !r.hasProfile || !r.profile.Accelerated() {
		return e.image
	}
	switch r.profile.Vendor {
	case hardware.NVIDIA:
		return e.image
	case hardware.Huawei:
		if e.ascendImage != "" {
			return e.ascendImage
		}
		return e.image // refused by checkHardware unless Image is set
	}
	if e.vendorFramework == "" {
		return ""
	}
	img, err := r.profile.Image(e.vendorFramework)
	if err != nil {
		return ""
	}
	return img
}
