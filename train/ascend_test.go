package train_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/train"
)

// annotationDevices reports whether a container reads
// ASCEND_VISIBLE_DEVICES from the pod annotation only Volcano's scheduler
// (with Huawei's plugin) writes.
func annotationDevices(tmpl corev1.PodTemplateSpec) bool {
	for _, e := range tmpl.Spec.Containers[0].Env {
		if e.Name == "ASCEND_VISIBLE_DEVICES" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			return true
		}
	}
	return false
}

// On a pod the default scheduler places, an ASCEND_VISIBLE_DEVICES read
// from Volcano's annotation is "" and, being in the pod spec, shadows the
// one the Ascend device plugin returns from Allocate (mind-cluster
// component/ascend-device-plugin/pkg/common/utils.go SetAscendRuntimeEnv):
// a training job's pods carry it only when Volcano schedules them — a
// gang-scheduled job (the operator or KubeRay sets schedulerName volcano)
// or a Volcano Job.
func TestAscendVisibleDevicesOnlyWhereVolcanoSchedules(t *testing.T) {
	ascend := hardware.Ascend910B3
	for _, gang := range []bool{false, true} {
		job := train.PyTorch("pt").Image(img).Command("python", "t.py").Workers(1).On(ascend).Accelerators(8)
		if gang {
			job.Gang().Queue("team-a")
		}
		objs, err := job.Build()
		require.NoError(t, err)
		for role, spec := range objs.Spec.PyTorchReplicaSpecs {
			assert.Equal(t, gang, annotationDevices(spec.Template), "PyTorchJob %s, gang %v", role, gang)
		}

		ray := train.Ray("ray").Image(img).Entrypoint("python train.py").WorkerGroup("npu", 1).HeadAccelerators(8).On(ascend).Accelerators(8)
		if gang {
			ray.Gang().Queue("team-a")
		}
		rj, err := ray.Build()
		require.NoError(t, err)
		assert.Equal(t, gang, annotationDevices(rj.Spec.RayClusterSpec.HeadGroupSpec.Template), "RayJob head, gang %v", gang)
		assert.Equal(t, gang, annotationDevices(rj.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template), "RayJob worker, gang %v", gang)
	}
	vc, err := train.Volcano("vc").Image(img).Command("python", "w.py").
		AddTask(train.VolcanoTask{Name: "worker", Replicas: 2}).On(ascend).Accelerators(8).Build()
	require.NoError(t, err)
	assert.True(t, annotationDevices(vc.Spec.Tasks[0].Template), "Volcano schedules a Volcano Job's pods")
}
