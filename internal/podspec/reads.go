package podspec

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/vgpu"
)

// SliceSetting returns the slice set with Slice (nil when none).
func (b *Builder[T]) SliceSetting() *vgpu.Spec { return b.slice }

// GPUCount returns the whole accelerators per pod set with Accelerators (0 when unset
// or when a slice is used).
func (b *Builder[T]) GPUCount() int {
	if b.slice != nil {
		return 0
	}
	return b.devices
}

// Profile returns the accelerator profile set with On or Slice, if any.
func (b *Builder[T]) Profile() (hardware.Profile, bool) {
	if b.profile == nil {
		return hardware.Profile{}, false
	}
	return *b.profile, true
}

// FabricSetting returns the fabric set with Fabric (the zero value when none).
func (b *Builder[T]) FabricSetting() hardware.Fabric { return b.fabric }

// QueueName returns the Volcano queue set with Queue.
func (b *Builder[T]) QueueName() string { return b.queue }

// SchedulerName returns the scheduler set with Scheduler.
func (b *Builder[T]) SchedulerName() string { return b.scheduler }

// PriorityClassName returns the priority class set with PriorityClass.
func (b *Builder[T]) PriorityClassName() string { return b.priorityClass }

// ImageName returns the image set with Image.
func (b *Builder[T]) ImageName() string { return b.image }

// CommandLine returns copies of the command and args set.
func (b *Builder[T]) CommandLine() (command, args []string) {
	return slices.Clone(b.command), slices.Clone(b.args)
}

// EnvVars returns a copy of the environment set on the builder.
func (b *Builder[T]) EnvVars() []corev1.EnvVar {
	out := make([]corev1.EnvVar, len(b.env))
	for i := range b.env {
		out[i] = *b.env[i].DeepCopy()
	}
	return out
}
