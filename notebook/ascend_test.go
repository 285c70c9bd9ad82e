package notebook_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/snapshot"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/vgpu"
)

// visibleDevices is the notebook container's ASCEND_VISIBLE_DEVICES, if any.
func visibleDevices(c corev1.Container) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == "ASCEND_VISIBLE_DEVICES" {
			return &c.Env[i]
		}
	}
	return nil
}

// ASCEND_VISIBLE_DEVICES from the huawei.com/Ascend910 annotation only on
// pods Volcano schedules: only Volcano with Huawei's plugin writes that
// annotation, and an empty variable in the pod spec overrides the one the
// Ascend device plugin returns from Allocate (mind-cluster
// component/ascend-device-plugin/pkg/common/utils.go SetAscendRuntimeEnv).
// Issue 10 item 21, for notebooks.
func TestAscendVisibleDevicesOnlyUnderVolcano(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cc := cube.NewFromClient(env.Client, cube.Namespace(ns))
	nb := func(name string) *notebook.Notebook {
		return notebook.Jupyter(name, "alice").Namespace(ns).Credential(pod.SecretKeyRef{Name: "tok", Key: "token"}).AllowNamespace(istio).
			On(hardware.Ascend910B3).Accelerators(1)
	}

	_, _, _, sts := objects(t, nb("npu"))
	c := sts.Spec.Template.Spec.Containers[0]
	assert.Empty(t, sts.Spec.Template.Spec.SchedulerName)
	assert.Nil(t, visibleDevices(c), "the device plugin sets it for the default scheduler's pods")
	npus := c.Resources.Limits[hardware.Ascend910B3.ResourceName]
	assert.Equal(t, int64(1), npus.Value(), "the NPU is still requested")
	_, err := cc.Apply(t.Context(), nb("npu"))
	require.NoError(t, err)

	_, _, _, sts = objects(t, nb("npu-volcano").Scheduler("volcano"))
	c = sts.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "volcano", sts.Spec.Template.Spec.SchedulerName)
	v := visibleDevices(c)
	require.NotNil(t, v, "Volcano's Ascend plugin writes the allocation annotation")
	require.NotNil(t, v.ValueFrom)
	require.NotNil(t, v.ValueFrom.FieldRef)
	assert.Equal(t, "metadata.annotations['huawei.com/Ascend910']", v.ValueFrom.FieldRef.FieldPath)
	_, err = cc.Apply(t.Context(), nb("npu-volcano").Scheduler("volcano"))
	require.NoError(t, err)
}

// Objects leaves every notebook as it was: defaults (the image, the home
// claim, the port) go into the objects, never back into the builder, and
// the objects returned are fresh, so changing them changes nothing.
func TestObjectsLeavesTheNotebookAlone(t *testing.T) {
	istio := map[string]string{"kubernetes.io/metadata.name": "istio-system"}
	ref := pod.SecretKeyRef{Name: "lab-credential", Key: "token"}
	for name, nb := range map[string]*notebook.Notebook{
		"jupyter on H100": notebook.Jupyter("lab", "alice").On(hardware.H100).Accelerators(1),
		"vscode on a slice": notebook.VSCode("code", "bob").
			Slice(vgpu.Slice(hardware.A100_80G).Memory("20Gi").Cores(30)),
		"rstudio with storage": notebook.RStudio("r", "carol").Storage("50Gi", "fast-ssd").MaxLifetime(72 * time.Hour),
	} {
		t.Run(name, func(t *testing.T) {
			nb.Namespace("team-a").Credential(ref).AllowNamespace(istio)
			before := snapshot.Of(nb)
			first, err := nb.Objects()
			if err != nil {
				t.Fatal(err)
			}
			if after := snapshot.Of(nb); after != before {
				t.Fatalf("Objects changed the notebook:\nbefore %s\nafter  %s", before, after)
			}
			first[0].SetLabels(map[string]string{"changed": "yes"})
			second, err := nb.Objects()
			if err != nil {
				t.Fatal(err)
			}
			if second[0].GetLabels()["changed"] == "yes" {
				t.Fatal("the objects of one call are the objects of the next")
			}
			if after := snapshot.Of(nb); after != before {
				t.Fatal("changing the returned objects changed the notebook")
			}
		})
	}
}
