package market

// The tools a download runs: the script around them, their environment
// and their command lines.

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/modelsource"
)

// downloadScript runs the tool given as its arguments, reporting progress
// every 30 seconds, then writes the summary to the termination message.
// Every value comes from the environment or the arguments, so nothing the
// caller gives is parsed by the shell.
const downloadScript = `set -eu
mkdir -p "$CUBE_MODEL_DIR"
if [ -n "${CUBE_PIP_PACKAGE:-}" ] && ! command -v "$1" >/dev/null 2>&1; then
  pip install --quiet --no-cache-dir "$CUBE_PIP_PACKAGE"
fi
if [ -n "${MODELSCOPE_API_TOKEN:-}" ]; then
  modelscope login --token "$MODELSCOPE_API_TOKEN" >/dev/null
fi
( while sleep 30 >/dev/null 2>&1; do echo "cube-download: $(du -sb "$CUBE_MODEL_DIR" | cut -f1) bytes so far"; done ) &
progress=$!
"$@"
kill "$progress" 2>/dev/null || true
cd "$CUBE_MODEL_DIR"
export LC_ALL=C
bytes=0
for n in $(find . -type f ! -path './.cache/*' ! -path './._____temp/*' -printf '%s\n'); do bytes=$((bytes + n)); done
sum=""
if [ -z "${CUBE_SKIP_CHECKSUM:-}" ]; then
  sum=sha256:$(find . -type f ! -path './.cache/*' ! -path './._____temp/*' -print0 | sort -z | xargs -0 -r sha256sum | sha256sum | cut -d' ' -f1)
fi
printf '{"bytes":%s,"checksum":"%s"}' "$bytes" "$sum" > "$CUBE_TERMINATION_LOG"
echo "cube-download: done, $bytes bytes"
`

// checkCredentials refuses the settings of a source the download does
// not fetch from: they would be dropped without a word.
func (d *DownloadJob) checkCredentials(scheme string, errs *field.ErrorList) {
	if scheme == "" {
		return
	}
	spec := field.NewPath("spec")
	*errs = append(*errs, d.source.Unused(spec, modelsource.Kind(scheme), modelsource.Kind(scheme))...)
	if scheme != SchemeHF && d.hfTransfer {
		*errs = append(*errs, field.Forbidden(spec.Child("hfTransfer"), fmt.Sprintf("applies to %s:// sources, not %s://", SchemeHF, scheme)))
	}
}

// toolEnv is what the download tool of scheme reads: its package, the
// source's settings and, for Hugging Face, hf_transfer.
func (d *DownloadJob) toolEnv(scheme string) []corev1.EnvVar {
	var env []corev1.EnvVar
	switch scheme {
	case SchemeHF:
		env = append(env, corev1.EnvVar{Name: "CUBE_PIP_PACKAGE", Value: HFPackage})
	case SchemeModelScope:
		env = append(env, corev1.EnvVar{Name: "CUBE_PIP_PACKAGE", Value: ModelScopePackage})
	}
	env = append(env, d.source.Env(modelsource.Kind(scheme))...)
	if scheme == SchemeHF && d.hfTransfer {
		env = append(env, corev1.EnvVar{Name: "HF_HUB_ENABLE_HF_TRANSFER", Value: "1"})
	}
	return env
}

// toolArgs is the download command: the flags of huggingface_hub's
// src/huggingface_hub/cli/download.py at v0.35.3 (hf download REPO
// --revision --local-dir --max-workers, and --include/--exclude, each
// nargs="*": one flag followed by every pattern, since a repeated flag
// replaces the patterns before it), of modelscope's modelscope/cli/download.py
// at v1.29.0 (--model --revision --local_dir --max-workers, --include and
// --exclude nargs="*" likewise), and aws s3 sync, whose filters repeat
// (testdata/contracts holds the facts, checked by TestRenderedCommandsKeepTheContracts).
func (d *DownloadJob) toolArgs(src source, rev, dest string) []string {
	workers := d.maxWorkers
	if workers == 0 {
		workers = 8
	}
	switch src.scheme {
	case SchemeHF:
		args := []string{"hf", "download", src.repo, "--local-dir", dest, "--max-workers", strconv.Itoa(workers)}
		if rev != "" {
			args = append(args, "--revision", rev)
		}
		return appendPatterns(args, d.include, d.exclude)
	case SchemeModelScope:
		args := []string{"modelscope", "download", "--model", src.repo, "--local_dir", dest, "--max-workers", strconv.Itoa(workers)}
		if rev != "" {
			args = append(args, "--revision", rev)
		}
		return appendPatterns(args, d.include, d.exclude)
	}
	args := []string{"aws", "s3", "sync", "s3://" + src.repo, dest, "--no-progress"}
	for _, p := range d.exclude {
		args = append(args, "--exclude", p)
	}
	if len(d.include) > 0 {
		// aws s3 sync includes everything unless excluded: exclude all, then
		// include the patterns (later filters win).
		args = append(args, "--exclude", "*")
		for _, p := range d.include {
			args = append(args, "--include", p)
		}
	}
	return args
}

// appendPatterns adds the hub tools' --include and --exclude, each once
// with all its patterns (both parsers declare them nargs="*").
func appendPatterns(args, include, exclude []string) []string {
	if len(include) > 0 {
		args = append(append(args, "--include"), include...)
	}
	if len(exclude) > 0 {
		args = append(append(args, "--exclude"), exclude...)
	}
	return args
}
