package market_test

// A model download on the one-node test cluster (internal/testsupport/testenv
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
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/market"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/serve"
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

// standinLMEval stands in for lm-evaluation-harness's lm_eval run with
// --model local-completions (lm_eval/models/openai_completions.py): it
// asks the served model at base_url for one completion and writes a
// results_<date>.json as lm_eval/loggers/evaluation_tracker.py lays it out,
// scoring 1 when the model answered.
const standinLMEval = `#!/usr/bin/env python3
import json, os, sys, urllib.request
assert sys.argv[1] == "run", sys.argv
args = dict(zip(sys.argv[2::2], sys.argv[3::2]))
assert args["--model"] == "local-completions", args
margs = dict(kv.split("=", 1) for kv in args["--model_args"].split(","))
req = urllib.request.Request(margs["base_url"], data=json.dumps({"model": margs["model"], "prompt": "2+2=", "max_tokens": 4}).encode(),
                             headers={"Content-Type": "application/json"})
text = json.load(urllib.request.urlopen(req, timeout=30))["choices"][0]["text"]
print("lm_eval stand-in: the model answered", repr(text), flush=True)
out = os.path.join(args["--output_path"], margs["model"].replace("/", "__"))
os.makedirs(out, exist_ok=True)
task = args["--tasks"]
json.dump({"results": {task: {"alias": task, "acc,none": 1.0 if text else 0.0, "acc_stderr,none": 0.0}}},
          open(os.path.join(out, "results_2026-12-01T00-00-00.json"), "w"))
`

func TestDownloadRunsAndRegistersOnTheCluster(t *testing.T) {
	c := testenv.GetCluster(t)
	ns := c.Namespace(t)
	ctx := t.Context()
	_, err := c.Clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "hf-standin"}, Data: map[string]string{"hf": standinHF, "lm_eval": standinLMEval},
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
		Register("qwen2-5-0-5b", "safetensors", models.BF16).
		Image(c.Images.Python).
		AddVolume(corev1.Volume{Name: "standin", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "hf-standin"}, DefaultMode: ptr.To[int32](0o755),
		}}}, "/opt/standin").
		Env("PATH", "/opt/standin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	cl, err := cube.New(c.Config, cube.Namespace(ns))
	require.NoError(t, err)
	rel, err := cl.Apply(ctx, d)
	require.NoError(t, err)
	_, err = rel.Wait(ctx, cube.Succeeded, cube.Timeout(3*time.Minute), cube.FailOnStuckPods)
	logs, _ := rel.Logs(ctx)
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

	// Serve it (the stand-in engine stands in for vLLM) and evaluate the
	// endpoint through cluster DNS; the scores land on the version. The
	// service's release needs a name of its own: "qwen" is the download's.
	svc := serve.VLLM("qwen-chat", "standin/qwen").Namespace(ns).Image(c.Images.Standin).CPU("100m").Memory("128Mi")
	srel, err := cl.Apply(ctx, svc)
	require.NoError(t, err)
	_, err = srel.Wait(ctx, cube.Ready, cube.Timeout(3*time.Minute), cube.FailOnStuckPods)
	require.NoError(t, err)
	svcURL, err := serve.URL(svc)
	require.NoError(t, err)
	eval := market.Evaluate("eval-qwen", v, "standin_echo").Namespace(ns).
		Endpoint(svcURL, "standin/qwen").
		Image(c.Images.Python).
		AddVolume(corev1.Volume{Name: "standin", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "hf-standin"}, DefaultMode: ptr.To[int32](0o755),
		}}}, "/opt/standin").
		Env("PATH", "/opt/standin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	erel, err := cl.Apply(ctx, eval)
	require.NoError(t, err)
	_, err = erel.Wait(ctx, cube.Succeeded, cube.Timeout(3*time.Minute), cube.FailOnStuckPods)
	elogs, _ := erel.Logs(ctx)
	var evalText []byte
	if elogs != nil {
		evalText, _ = readAllClose(elogs)
	}
	require.NoError(t, err, string(evalText))
	assert.Contains(t, string(evalText), "the model answered")
	scored, err := market.RecordEvaluation(ctx, c.Client, reg, eval)
	require.NoError(t, err)
	assert.Equal(t, 1.0, scored.Metrics["standin_echo/acc"], "metrics: %v", scored.Metrics)
}

func readAllClose(r io.ReadCloser) ([]byte, error) {
	defer r.Close()
	return io.ReadAll(r)
}
