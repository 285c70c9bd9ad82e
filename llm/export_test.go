package llm_test

import (
	"testing"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/contract"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/llm"
)

func TestMergeRendersLLaMAFactoryExport(t *testing.T) {
	sft := builders[0].build("qwen-sft")
	merge := sft.Merge("qwen-merge", "pvc://models/qwen-merged")
	objs, err := merge.Objects()
	require.NoError(t, err)
	require.Len(t, objs, 2)
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(objs[0].(*corev1.ConfigMap).Data[llm.ExportKey]), &cfg))
	assert.Equal(t, map[string]any{
		"model_name_or_path":   "Qwen/Qwen2.5-7B-Instruct",
		"adapter_name_or_path": "/adapters/models/qwen-sft",
		"template":             "qwen",
		"export_dir":           "/output/qwen-merged",
		"export_size":          5.0,
		"export_device":        "cpu",
	}, cfg)
	assert.NoError(t, llamaFactory(t).CheckKeys("export.yaml", contract.Flatten(cfg)))
	job := objs[1].(*kubeflowv1.PyTorchJob)
	require.Len(t, job.Spec.PyTorchReplicaSpecs, 1)
	c := job.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster].Template.Spec.Containers[0]
	assert.Equal(t, []string{"llamafactory-cli", "export", "/etc/llamafactory/export.yaml"}, c.Command)
	assert.Equal(t, llm.DefaultImage, c.Image)
	assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "llm-claim-0", MountPath: "/adapters/models", ReadOnly: true})
	assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "llm-claim-1", MountPath: "/output"})

	merge.Job().On(hardware.H100).Accelerators(1)
	objs, err = merge.Objects()
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal([]byte(objs[0].(*corev1.ConfigMap).Data[llm.ExportKey]), &cfg))
	assert.Equal(t, "auto", cfg["export_device"])

	svc, err := merge.Serve("qwen-merged").On(hardware.L4).Objects()
	require.NoError(t, err)
	out, err := yaml.Marshal(svc)
	require.NoError(t, err)
	assert.Contains(t, string(out), "claimName: models")

	_, err = builders[2].build("full").Merge("m", "pvc://models/m").Objects()
	assert.Equal(t, []string{"fineTune.finetuning_type"}, fields(t, err))
	_, err = (*llm.FineTune)(nil).Merge("m", "hf://x").Objects()
	assert.ElementsMatch(t, []string{"fineTune", "model_name_or_path", "adapter_name_or_path", "export_dir", "template"}, fields(t, err))
	_, err = (*llm.Export)(nil).Objects()
	assert.ErrorContains(t, err, "FineTune.Merge")

	env := testenv.Get(t)
	ns := env.Namespace(t)
	cl := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.Clientset(env.Clientset))
	fuzzcorpus.Stored(t, cl, env, ns, merge)
}
