package market_test

import (
	"testing"
	"time"

	"github.com/cubestudio/cube/pod"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/market"
	"github.com/cubestudio/cube/retry"
)

func envMap(t *testing.T, c corev1.Container) map[string]corev1.EnvVar {
	t.Helper()
	out := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		_, dup := out[e.Name]
		assert.False(t, dup, "env %s twice", e.Name)
		out[e.Name] = e
	}
	return out
}

func secretRef(secret, key string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}
}

func TestDownloadFromHuggingFace(t *testing.T) {
	job, err := market.Download("qwen-7b", "hf://Qwen/Qwen2.5-7B-Instruct@a09a35458c702b33eeacc393d103063234e8bc28", "models").
		Namespace("ml").HFToken(pod.SecretKeyRef{Name: "hf", Key: "token"}).HFEndpoint("https://hf-mirror.com").HFTransfer().
		Include("*.json", "*.safetensors").Exclude("original/*").CPU("2").Memory("4Gi").
		Build()
	require.NoError(t, err)
	assert.Equal(t, "ml", job.Namespace)
	assert.Equal(t, "modeldownload", job.Labels["cube.dev/kind"])
	assert.Equal(t, int32(4), *job.Spec.BackoffLimit)
	assert.Equal(t, "pvc://models/Qwen/Qwen2.5-7B-Instruct", job.Annotations[market.AnnotationTarget])
	assert.Equal(t, "a09a35458c702b33eeacc393d103063234e8bc28", job.Annotations[market.AnnotationRevision])
	spec := job.Spec.Template.Spec
	assert.Equal(t, corev1.RestartPolicyNever, spec.RestartPolicy)
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	assert.Equal(t, "download", c.Name)
	assert.Equal(t, market.DefaultDownloadImage, c.Image)
	assert.Equal(t, []string{"sh", "-c"}, c.Command[:2])
	assert.Equal(t, []string{
		"hf", "download", "Qwen/Qwen2.5-7B-Instruct", "--local-dir", "/models/Qwen/Qwen2.5-7B-Instruct", "--max-workers", "8",
		"--revision", "a09a35458c702b33eeacc393d103063234e8bc28",
		"--include", "*.json", "*.safetensors", "--exclude", "original/*",
	}, c.Args)
	env := envMap(t, c)
	assert.Equal(t, secretRef("hf", "token"), env["HF_TOKEN"].ValueFrom)
	assert.Empty(t, env["HF_TOKEN"].Value, "the token is never a literal")
	assert.Equal(t, "https://hf-mirror.com", env["HF_ENDPOINT"].Value)
	assert.Equal(t, "1", env["HF_HUB_ENABLE_HF_TRANSFER"].Value)
	assert.Equal(t, market.HFPackage, env["CUBE_PIP_PACKAGE"].Value)
	assert.Equal(t, "/models/Qwen/Qwen2.5-7B-Instruct", env["CUBE_MODEL_DIR"].Value)
	assert.Equal(t, corev1.TerminationMessageReadFile, c.TerminationMessagePolicy)
	assert.Equal(t, []corev1.VolumeMount{{Name: "models", MountPath: "/models"}}, c.VolumeMounts)
	assert.Equal(t, "models", spec.Volumes[0].PersistentVolumeClaim.ClaimName)
	assert.Equal(t, "2", c.Resources.Requests.Cpu().String())
}

func TestDownloadFromModelScopeAndS3(t *testing.T) {
	job, err := market.Download("glm", "modelscope://ZhipuAI/glm-4-9b-chat", "models").
		Into("glm/v1").Revision("v1.0.0").ModelScopeToken(pod.SecretKeyRef{Name: "ms", Key: "token"}).ModelScopeEndpoint("https://www.modelscope.ai").
		Include("*.safetensors", "*.json").MaxWorkers(4).Build()
	require.NoError(t, err)
	c := job.Spec.Template.Spec.Containers[0]
	assert.Equal(t, []string{"modelscope", "download", "--model", "ZhipuAI/glm-4-9b-chat", "--local_dir", "/models/glm/v1",
		"--max-workers", "4", "--revision", "v1.0.0", "--include", "*.safetensors", "*.json"}, c.Args)
	env := envMap(t, c)
	assert.Equal(t, secretRef("ms", "token"), env["MODELSCOPE_API_TOKEN"].ValueFrom)
	assert.Equal(t, "www.modelscope.ai", env["MODELSCOPE_DOMAIN"].Value)
	assert.Equal(t, "pvc://models/glm/v1", job.Annotations[market.AnnotationTarget])

	job, err = market.Download("bot", "s3://team-models/support-bot/v3", "models").
		S3Credentials(pod.SecretKeyRef{Name: "minio", Key: "AWS_ACCESS_KEY_ID"}, pod.SecretKeyRef{Name: "minio", Key: "AWS_SECRET_ACCESS_KEY"}).S3Endpoint("http://minio.storage:9000").S3Region("us-east-1").Include("*.safetensors").SkipChecksum().Build()
	require.NoError(t, err)
	c = job.Spec.Template.Spec.Containers[0]
	assert.Equal(t, market.DefaultS3DownloadImage, c.Image)
	assert.Equal(t, []string{"aws", "s3", "sync", "s3://team-models/support-bot/v3", "/models/team-models/support-bot/v3", "--no-progress",
		"--exclude", "*", "--include", "*.safetensors"}, c.Args)
	env = envMap(t, c)
	assert.Equal(t, secretRef("minio", "AWS_ACCESS_KEY_ID"), env["AWS_ACCESS_KEY_ID"].ValueFrom)
	assert.Equal(t, secretRef("minio", "AWS_SECRET_ACCESS_KEY"), env["AWS_SECRET_ACCESS_KEY"].ValueFrom)
	assert.Equal(t, "http://minio.storage:9000", env["AWS_ENDPOINT_URL"].Value)
	assert.Equal(t, "1", env["CUBE_SKIP_CHECKSUM"].Value)
	_, hasPip := env["CUBE_PIP_PACKAGE"]
	assert.False(t, hasPip)
}

func TestDownloadErrorsAreJoined(t *testing.T) {
	_, err := market.Download("Bad_Name", "ftp://x", "").Retry(retry.Policy{Limit: -1, Backoff: time.Second}).MaxWorkers(0).
		HFToken(pod.SecretKeyRef{Name: "", Key: ""}).HFEndpoint("mirror").Include("-rf", "a b").Register("Bad", "safetensors", "fp12").
		Env("HF_TOKEN", "hf_abcdefghijklmnopqrstuvwxyz0123456789").Build()
	require.Error(t, err)
	for _, want := range []string{
		"metadata.name", "spec.source", "spec.claim", "spec.retry.limit", "spec.retry.backoff", "spec.maxWorkers", "spec.hfToken",
		"spec.hfEndpoint", "spec.include[0]", "spec.include[1]", "spec.register.model", "spec.register.dtype", "HF_TOKEN",
	} {
		assert.ErrorContains(t, err, want)
	}

	_, err = market.Download("x", "hf://Qwen/Qwen2.5-7B", "models").S3Credentials(pod.SecretKeyRef{Name: "minio", Key: "AWS_ACCESS_KEY_ID"}, pod.SecretKeyRef{Name: "minio", Key: "AWS_SECRET_ACCESS_KEY"}).ModelScopeToken(pod.SecretKeyRef{Name: "ms", Key: "t"}).Build()
	assert.ErrorContains(t, err, "spec.s3Credentials: Forbidden: applies to s3:// sources, not hf://")
	assert.ErrorContains(t, err, "spec.modelScopeToken: Forbidden")
	_, err = market.Download("x", "s3://bucket/p", "models").Revision("main").HFTransfer().Build()
	assert.ErrorContains(t, err, "S3 has no revisions")
	assert.ErrorContains(t, err, "spec.hfTransfer")
	_, err = market.Download("x", "pvc://models/a", "models").Build()
	assert.ErrorContains(t, err, "already on a claim")
	_, err = market.Download("x", "hf://Qwen/Qwen2.5-7B@-x", "models").Build()
	assert.ErrorContains(t, err, `spec.source: Invalid value: "hf://Qwen/Qwen2.5-7B@-x": revision "-x" is not a valid branch, tag or commit`)
	_, err = market.Download("x", "hf://Qwen/Qwen2.5-7B", "models").Revision("-x").Build()
	assert.ErrorContains(t, err, "spec.revision")

	var nilJob *market.DownloadJob
	_, err = nilJob.Objects()
	assert.ErrorContains(t, err, "nil")
	assert.Nil(t, nilJob.Into("x").Revision("y").HFToken(pod.SecretKeyRef{Name: "a", Key: "b"}).S3Region("r"))
}

func TestDownloadObjectsAreFresh(t *testing.T) {
	d := market.Download("qwen", "hf://Qwen/Qwen2.5-7B-Instruct", "models")
	a, err := d.Objects()
	require.NoError(t, err)
	a[0].(*batchv1.Job).Spec.Template.Spec.Containers[0].Args[0] = "changed"
	b, err := d.Objects()
	require.NoError(t, err)
	assert.Equal(t, "hf", b[0].(*batchv1.Job).Spec.Template.Spec.Containers[0].Args[0])
}

func TestParseDownloadSummary(t *testing.T) {
	s, err := market.ParseDownloadSummary(`{"bytes":15231233024,"checksum":"sha256:` + sha64 + `"}`)
	require.NoError(t, err)
	assert.Equal(t, market.DownloadSummary{Bytes: 15231233024, Checksum: "sha256:" + sha64}, s)
	s, err = market.ParseDownloadSummary(`{"bytes":12,"checksum":""}`)
	require.NoError(t, err)
	assert.Equal(t, int64(12), s.Bytes)
	for _, bad := range []string{``, `{`, `{"bytes":-1,"checksum":""}`, `{"bytes":1,"checksum":"md5:1"}`, `{"bytes":1,"extra":2}`} {
		_, err := market.ParseDownloadSummary(bad)
		assert.Error(t, err, bad)
	}
}

const sha64 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
