package market_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/ci"
	"github.com/cubestudio/cube/market"
)

// requireTools skips when a tool the pod scripts use is missing from this
// machine, and fails under CI=true, where the machine must have them.
func requireTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			ci.Skip(t, "%s (not installed)", tool)
		}
	}
}

// runPodScript runs a container's rendered script the way the pod would,
// with the real downloader or harness replaced by fake, and the paths of
// the pod (the claim, the results volume, the termination log) moved into
// a temporary directory.
func runPodScript(t *testing.T, c corev1.Container, paths map[string]string, fake ...string) string {
	t.Helper()
	require.Equal(t, []string{"sh", "-c"}, c.Command[:2])
	cmd := exec.Command("sh", append([]string{"-c", c.Command[2], c.Command[3]}, fake...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for _, e := range c.Env {
		if e.ValueFrom == nil && paths[e.Name] == "" {
			cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
		}
	}
	for k, v := range paths {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	message, err := os.ReadFile(paths["CUBE_TERMINATION_LOG"])
	require.NoError(t, err)
	return string(message)
}

// TestDownloadScriptReportsSizeAndChecksum runs the download pod's script
// with a stand-in for hf download (which cannot reach the Hub here) that
// writes weights, a nested file, an odd name and the tool's own .cache,
// and checks the summary against Checksum computed in Go.
func TestDownloadScriptReportsSizeAndChecksum(t *testing.T) {
	requireTools(t, "sh", "find", "sort", "xargs", "sha256sum", "du", "cut")
	job, err := market.Download("qwen", "hf://Qwen/Qwen2.5-7B-Instruct", "models").Build()
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "model")
	log := filepath.Join(t.TempDir(), "termination-log")
	message := runPodScript(t, job.Spec.Template.Spec.Containers[0],
		map[string]string{"CUBE_MODEL_DIR": dir, "CUBE_TERMINATION_LOG": log},
		"sh", "-c", `cd "$CUBE_MODEL_DIR" && mkdir -p sub .cache/huggingface &&
			printf '{"model_type":"qwen2"}' > config.json &&
			head -c 100000 /dev/zero > model-00001-of-00002.safetensors &&
			printf 'b' > sub/Z.bin && printf 'c' > 'odd name\with slash' &&
			printf 'lock' > .cache/huggingface/download.lock`)
	summary, err := market.ParseDownloadSummary(message)
	require.NoError(t, err)
	size, sum, err := market.Checksum(os.DirFS(dir))
	require.NoError(t, err)
	assert.Equal(t, int64(22+100000+1+1), size)
	assert.Equal(t, market.DownloadSummary{Bytes: size, Checksum: sum}, summary)
}

// TestEvaluationScriptReportsScores runs the evaluation pod's script with
// a stand-in for lm_eval that writes the results file the harness writes,
// and records what the pod would report.
func TestEvaluationScriptReportsScores(t *testing.T) {
	requireTools(t, "sh", "python3")
	v := registered("pvc://models/support-bot/v3")
	job, err := market.Evaluate("eval", v, "mmlu").On(hardware.H100).Accelerators(1).Build()
	require.NoError(t, err)
	results := t.TempDir()
	fixture, err := filepath.Abs("testdata/lmeval/results_2025-07-01T10-00-00.json")
	require.NoError(t, err)
	log := filepath.Join(t.TempDir(), "termination-log")
	message := runPodScript(t, job.Spec.Template.Spec.Containers[0],
		map[string]string{"CUBE_RESULTS_DIR": results, "CUBE_TERMINATION_LOG": log},
		"sh", "-c", `mkdir -p "$CUBE_RESULTS_DIR/support-bot" && cp "$0" "$CUBE_RESULTS_DIR/support-bot/"`, fixture)
	assert.Less(t, len(message), 4096, "a termination message holds 4096 bytes")
	got, err := market.ParseLMEvalResults([]byte(message))
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{
		"mmlu/acc": 0.7183, "gsm8k/exact_match/strict-match": 0.8211, "gsm8k/exact_match/flexible-extract": 0.8355,
		"hellaswag/acc": 0.6112, "hellaswag/acc_norm": 0.8004,
	}, got)
}

func TestChecksumOfNothing(t *testing.T) {
	size, sum, err := market.Checksum(os.DirFS(t.TempDir()))
	require.NoError(t, err)
	assert.Zero(t, size)
	// sha256 of the empty manifest.
	assert.Equal(t, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", sum)
	_, _, err = market.Checksum(nil)
	assert.Error(t, err)
}
