package market_test

// A model download on the one-node test cluster (internal/testenv
// GetCluster): the Job cube renders really runs its download script in a
// pod, writes onto a real claim, reports size and checksum in its
// termination message, and RegisterDownload registers the version in the
// Kubernetes store. Hugging Face cannot be reached here, so an hf command
// of this test stands in for huggingface_hub's `hf download` (it takes the
// same arguments and writes two files into --local-dir); the script finds
// it on PATH and installs nothing.

import (
	"io"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testenv"
	"github.com/cubestudio/cube/market"
)

const standinHF = `#!/bin/sh
set -eu
[ "$1" = download ] || { echo "hf stand-in: only download" >&2; exit 2; }
repo=$2; shift 2
dir=
while [ $# -gt 0 ]; do
  case "$1" in
    --local-dir) dir=$2; shift 2 ;;
    *) shift ;;
  esac
done
[ -n "$dir" ] || { echo "hf stand-in: no --local-dir" >&2; exit 2; }
mkdir -p "$dir"
printf '{"model_type":"qwen2"}' > "$dir/config.json"
printf 'weights of %s' "$repo" > "$dir/model.safetensors"
echo "hf stand-in: downloaded $repo to $dir"
`

func TestDownloadRunsAndRegistersOnTheCluster(t *testing.T) {
	c := testenv.GetCluster(t)
	ns := c.Namespace(t)
	ctx := t.Context()
	_, err := c.Clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "hf-standin"}, Data: map[string]string{"hf": standinHF},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.Clientset.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "models"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	const source = "hf://Qwen/Qwen2.5-0.5B-Instruct"
	d := market.Download("qwen", source, "models").Namespace(ns).
		Register("qwen2-5-0-5b", "safetensors", market.BF16).
		Image(c.Images.Python).
		AddVolume(corev1.Volume{Name: "standin", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "hf-standin"}, DefaultMode: ptr.To[int32](0o755),
		}}}, "/opt/standin").
		Env("PATH", "/opt/standin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	cl, err := cube.New(c.Config, cube.WithNamespace(ns))
	require.NoError(t, err)
	rel, err := cl.Apply(ctx, d)
	require.NoError(t, err)
	_, err = rel.Wait(ctx, cube.Succeeded, cube.Timeout(3*time.Minute), cube.FailOnStuckPods())
	logs, _ := rel.Logs(ctx, cube.LogOptions{})
	var logText []byte
	if logs != nil {
		logText, _ = readAllClose(logs)
	}
	require.NoError(t, err, string(logText))
	assert.Contains(t, string(logText), "hf stand-in: downloaded Qwen/Qwen2.5-0.5B-Instruct")

	// What the files the stand-in wrote add up to, by market's own checksum.
	files := fstest.MapFS{
		"config.json":       {Data: []byte(`{"model_type":"qwen2"}`)},
		"model.safetensors": {Data: []byte("weights of Qwen/Qwen2.5-0.5B-Instruct")},
	}
	size, sum, err := market.Checksum(files)
	require.NoError(t, err)

	store, err := market.NewKubernetesStore(c.Client, ns)
	require.NoError(t, err)
	reg := market.NewRegistry(store)
	v, err := market.RegisterDownload(ctx, c.Client, reg, d)
	require.NoError(t, err)
	assert.Equal(t, "qwen2-5-0-5b@1", v.Ref())
	assert.Equal(t, size, v.Artifact.SizeBytes)
	assert.Equal(t, sum, v.Artifact.Checksum, "the pod's checksum of the claim's files is market.Checksum's")
	assert.Equal(t, "pvc://models/"+filepath.ToSlash("Qwen/Qwen2.5-0.5B-Instruct"), v.Artifact.URI)
}

func readAllClose(r io.ReadCloser) ([]byte, error) {
	defer r.Close()
	return io.ReadAll(r)
}
