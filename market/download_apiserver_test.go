package market_test

import (
	"testing"
	"time"

	"github.com/cubestudio/cube/pod"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/market"
	"github.com/cubestudio/cube/models"
)

// finishJob plays the Job controller and the kubelet, which the test API
// server does not run: it marks the Job complete and adds a succeeded pod
// of it whose container reports message. The test cluster would run the
// pod for real, but it cannot reach Hugging Face, ModelScope or S3.
func finishJob(t *testing.T, env *testenv.Env, ns, name, container, message string) {
	t.Helper()
	ctx := t.Context()
	job := &batchv1.Job{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job))
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	job.Status = batchv1.JobStatus{
		StartTime: &now, CompletionTime: &now, Succeeded: 1,
		Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		},
	}
	require.NoError(t, env.Client.Status().Update(ctx, job))

	tmpl := job.Spec.Template
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-abcde", Namespace: ns, Labels: map[string]string{batchv1.JobNameLabel: name}},
		Spec:       tmpl.Spec,
	}
	require.NoError(t, env.Client.Create(ctx, p))
	p.Status = corev1.PodStatus{
		Phase: corev1.PodSucceeded,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: container, Image: tmpl.Spec.Containers[0].Image, ImageID: "sha256:" + sha64,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", Message: message, StartedAt: now, FinishedAt: now,
			}},
		}},
	}
	require.NoError(t, env.Client.Status().Update(ctx, p))
}

// TestDownloadAppliesAndRegisters applies download Jobs for the three
// sources with strict field validation, then registers one once it has
// "succeeded", twice, getting one version.
func TestDownloadAppliesAndRegisters(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	cl := cube.NewFromClient(env.Client, cube.Namespace(ns))
	for _, d := range []*market.DownloadJob{
		market.Download("qwen", "hf://Qwen/Qwen2.5-7B-Instruct@a09a35458c702b33eeacc393d103063234e8bc28", "models").
			HFToken(pod.SecretKeyRef{Name: "hf", Key: "token"}).HFEndpoint("https://hf-mirror.com").Include("*.safetensors"),
		market.Download("glm", "modelscope://ZhipuAI/glm-4-9b-chat", "models").ModelScopeToken(pod.SecretKeyRef{Name: "ms", Key: "token"}),
		market.Download("bot", "s3://team/bot", "models").S3Credentials(pod.SecretKeyRef{Name: "minio", Key: "AWS_ACCESS_KEY_ID"}, pod.SecretKeyRef{Name: "minio", Key: "AWS_SECRET_ACCESS_KEY"}).S3Endpoint("http://minio:9000"),
	} {
		_, err := cl.Apply(ctx, d.Namespace(ns))
		require.NoError(t, err, podspec.Of(&d.Handle).Name())
	}

	store, err := market.NewKubernetesStore(env.Client, ns)
	require.NoError(t, err)
	reg := market.NewRegistry(store)
	d := market.Download("qwen", "hf://Qwen/Qwen2.5-7B-Instruct@a09a35458c702b33eeacc393d103063234e8bc28", "models").
		HFToken(pod.SecretKeyRef{Name: "hf", Key: "token"}).HFEndpoint("https://hf-mirror.com").Include("*.safetensors").
		Namespace(ns).Register("qwen2-5-7b-instruct", "safetensors", models.BF16)
	_, err = market.RegisterDownload(ctx, env.Client, reg, d)
	require.ErrorIs(t, err, market.ErrNotFinished)

	finishJob(t, env, ns, "qwen", "download", `{"bytes":15231233024,"checksum":"sha256:`+sha64+`"}`)
	v, err := market.RegisterDownload(ctx, env.Client, reg, d)
	require.NoError(t, err)
	assert.Equal(t, "qwen2-5-7b-instruct@1", v.Ref())
	assert.Equal(t, market.Artifact{
		URI: "pvc://models/Qwen/Qwen2.5-7B-Instruct", Format: "safetensors", DType: models.BF16,
		SizeBytes: 15231233024, Checksum: "sha256:" + sha64,
	}, v.Artifact)
	assert.Equal(t, "hf://Qwen/Qwen2.5-7B-Instruct@a09a35458c702b33eeacc393d103063234e8bc28", v.Lineage.BaseModel)

	again, err := market.RegisterDownload(ctx, env.Client, reg, d)
	require.NoError(t, err)
	assert.Equal(t, v.Ref(), again.Ref(), "a second call finds the version it registered")
	all, err := reg.Versions(ctx, "qwen2-5-7b-instruct")
	require.NoError(t, err)
	assert.Len(t, all, 1)
}
