package serve_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/testsupport/contract"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/serve"
)

// contractCases are builder setups beyond the goldens that reach the
// settings each contracted engine renders: every vLLM and TEI flag cube
// spells, each source kind, the default images.
func contractCases() []goldenCase {
	return []goldenCase{
		{"vllm-every-setting", serve.VLLM("every", "Qwen/Qwen2.5-7B-Instruct@main").
			On(hardware.H100).Accelerators(2).TensorParallel(2).
			MaxModelLen(4096).MemoryUtilization(0.8).DType("bfloat16").
			Quantization("fp8").KVCacheDType("fp8").
			ServedModelName("chat").TrustRemoteCode().PrefixCaching(false).
			APIKey(pod.SecretKeyRef{Name: "vllm-key", Key: "key"})},
		{"vllm-modelscope", serve.VLLM("ms", "modelscope://Qwen/Qwen2.5-7B-Instruct").
			On(hardware.L4).Accelerators(1).ModelCache("cache")},
		{"vllm-pvc-lora", serve.VLLM("pvc", "pvc://models/qwen").
			On(hardware.A100_80G).Accelerators(1).LoRA("a", "pvc://adapters/a")},
		{"vllm-ascend", serve.VLLM("npu", "Qwen/Qwen2.5-7B-Instruct").
			On(hardware.Ascend910B3).Accelerators(2)},
		{"vllm-ascend-multinode", serve.VLLM("npu-multi", "Qwen/Qwen2.5-72B-Instruct").
			On(hardware.Ascend910B3).Accelerators(8).Nodes(2).TensorParallel(8).PipelineParallel(2)},
		{"sglang-every-setting", serve.SGLang("every", "Qwen/Qwen2.5-7B-Instruct@main").
			On(hardware.H100).Accelerators(2).TensorParallel(2).
			MaxModelLen(4096).MemoryUtilization(0.8).DType("bfloat16").
			Quantization("fp8").KVCacheDType("fp8_e4m3").
			ServedModelName("chat").TrustRemoteCode().PrefixCaching(false).
			LoRA("a", "pvc://adapters/a").LoRA("b", "org/b").
			APIKey(pod.SecretKeyRef{Name: "sglang-key", Key: "key"})},
		{"sglang-modelscope", serve.SGLang("ms", "modelscope://Qwen/Qwen2.5-7B-Instruct").
			On(hardware.L4).Accelerators(1).ModelCache("cache")},
		{"tei-default", serve.TEI("embed", "BAAI/bge-m3").On(hardware.L4).Accelerators(1)},
		{"tei-served-name", serve.TEI("embed", "BAAI/bge-m3@main").On(hardware.H100).Accelerators(1).
			ServedModelName("bge").DType("float16").
			APIKey(pod.SecretKeyRef{Name: "tei-key", Key: "key"}).ModelCache("cache")},
		{"tei-pvc", serve.TEI("embed", "pvc://models/bge-m3").On(hardware.A10).Accelerators(1)},
	}
}

// libraryEnv are variables the pod settings give the collective libraries
// (NCCL, HCCL, Gloo, Ray's device handling): the hardware package renders
// and checks those, not an engine's contract. CUBE_API_KEY is read by no
// engine: Kubernetes substitutes it into the --api-key argument.
func libraryEnv(name string) bool {
	if name == "CUBE_API_KEY" {
		return true
	}
	for _, p := range []string{"NCCL_", "HCCL_", "GLOO_", "TP_SOCKET_", "RAY_", "ASCEND_", "NVIDIA_", "UCX_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// TestContracts checks every command line and environment cube renders for
// vLLM, TEI and SGLang — every golden case and every contract case — against the
// engines' contracts in testdata/contracts, written from their source at
// the pinned versions, and checks that each default image holds what cube
// runs in it.
func TestContracts(t *testing.T) {
	contracts := map[string]*contract.Contract{}
	for _, name := range []string{"vllm", "tei", "sglang"} {
		c, err := contract.Load("testdata/contracts/" + name + ".tsv")
		require.NoError(t, err)
		contracts[name] = c
	}
	checked := map[string]int{}
	for _, gc := range append(goldenCases(), contractCases()...) {
		t.Run(gc.name, func(t *testing.T) {
			objs, err := gc.w.Objects()
			require.NoError(t, err)
			defaultImage := ""
			if s, ok := gc.w.(*serve.Service); ok && podspec.Of(&s.Handle).ImageName() == "" {
				defaultImage = "yes"
			}
			for _, o := range objs {
				var templates []corev1.PodTemplateSpec
				switch o := o.(type) {
				case *appsv1.Deployment:
					templates = append(templates, o.Spec.Template)
				case *lwsv1.LeaderWorkerSet:
					// The leader runs the server; a vLLM worker runs only
					// `ray start`, an SGLang worker the same server.
					if lt := o.Spec.LeaderWorkerTemplate.LeaderTemplate; lt != nil {
						templates = append(templates, *lt)
					}
				}
				for _, tmpl := range templates {
					main := tmpl.Spec.Containers[0]
					c, ok := contracts[main.Name]
					if !ok {
						continue
					}
					checked[main.Name]++
					what := fmt.Sprintf("%s %s", o.GetObjectKind().GroupVersionKind().Kind, o.GetName())
					args := main.Args
					switch main.Name {
					case "vllm":
						// vllm serve, or the multi-node leader's script,
						// which ends in exec vllm serve "$@".
						single := slices.Equal(main.Command, []string{"vllm", "serve"})
						leader := len(main.Command) == 4 && main.Command[0] == "/bin/sh" && strings.Contains(main.Command[2], `exec vllm serve "$@"`)
						require.True(t, single || leader, "%s: command %q", what, main.Command)
					case "sglang":
						require.Equal(t, []string{"python3", "-m", "sglang.launch_server"}, main.Command, what)
					case "tei":
						// The image's entrypoint starts the router; a command
						// must name a binary the image holds (CheckImage).
						require.True(t, len(main.Command) <= 1, "%s: command %q", what, main.Command)
					}
					positional, err := c.CheckArgs(what, args)
					if err != nil {
						t.Error(err)
					}
					if main.Name == "vllm" {
						require.Len(t, positional, 1, "%s: vllm serve takes the model alone as a positional: %q", what, args)
					} else {
						require.Empty(t, positional, "%s: %q", what, args)
					}
					env := map[string]string{}
					for _, e := range main.Env {
						if !libraryEnv(e.Name) {
							env[e.Name] = e.Value
						}
					}
					if err := c.CheckEnv(what, env); err != nil {
						t.Error(err)
					}
					if defaultImage == "" {
						continue
					}
					cfg := flagConfig(args)
					for k, v := range env {
						cfg[k] = v
					}
					if len(main.Command) > 0 {
						cfg["command"] = main.Command[0]
					}
					if err := c.CheckImage(what, main.Image, cfg); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	require.NotZero(t, checked["vllm"], "no vLLM configuration was checked")
	require.NotZero(t, checked["tei"], "no TEI configuration was checked")
	require.NotZero(t, checked["sglang"], "no SGLang configuration was checked")
}

// flagConfig reads a command line as CheckArgs does: each flag to its
// value, "" for a switch.
func flagConfig(args []string) map[string]string {
	cfg := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, value, inline := strings.Cut(a, "=")
		if !inline && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			value = args[i+1]
			i++
		}
		cfg[name] = value
	}
	return cfg
}

// A contract refuses what the issue found: TEI before 1.9 defines no
// --served-model-name, and an unknown flag or a repeated switch of vLLM's.
func TestContractsRefuse(t *testing.T) {
	tei, err := contract.Load("testdata/contracts/tei.tsv")
	require.NoError(t, err)
	err = tei.CheckImage("tei", "ghcr.io/huggingface/text-embeddings-inference:1.8", map[string]string{"--served-model-name": "bge"})
	require.ErrorContains(t, err, "text-embeddings-inference>=1.9.0")
	err = tei.CheckImage("tei", serve.DefaultTEIImage, map[string]string{"command": "text-embeddings-router"})
	require.ErrorContains(t, err, "does not contain")
	_, err = tei.CheckArgs("tei", []string{"--pooling", "last_token"})
	require.ErrorContains(t, err, "is not one of")

	vllm, err := contract.Load("testdata/contracts/vllm.tsv")
	require.NoError(t, err)
	_, err = vllm.CheckArgs("vllm", []string{"m", "--lora-modules", "a=b"})
	require.ErrorContains(t, err, "requires --enable-lora")
	_, err = vllm.CheckArgs("vllm", []string{"m", "--kv-cache-dtype", "fp4"})
	require.ErrorContains(t, err, "is not one of")
	var _ cube.Workload = serve.TEI("x", "y")
}

// checkRendered checks the vLLM and TEI containers of objs against their
// contracts; the caller's own arguments (AddArgs, which come last) and
// environment are the caller's, not cube's, and are left out.
func checkRendered(t *testing.T, contracts map[string]*contract.Contract, svc *serve.Service, objs []client.Object) {
	t.Helper()
	userCommand, userArgs := podspec.Of(&svc.Handle).CommandLine()
	if len(userCommand) > 0 {
		return
	}
	userEnv := map[string]bool{}
	for _, e := range podspec.Of(&svc.Handle).EnvVars() {
		userEnv[e.Name] = true
	}
	for _, o := range objs {
		var tmpl *corev1.PodTemplateSpec
		switch o := o.(type) {
		case *appsv1.Deployment:
			tmpl = &o.Spec.Template
		case *lwsv1.LeaderWorkerSet:
			tmpl = o.Spec.LeaderWorkerTemplate.LeaderTemplate
		}
		if tmpl == nil {
			continue
		}
		main := tmpl.Spec.Containers[0]
		c, ok := contracts[main.Name]
		if !ok {
			continue
		}
		args := main.Args[:len(main.Args)-len(userArgs)]
		if _, err := c.CheckArgs(o.GetName(), args); err != nil {
			t.Errorf("accepted but refused by the engine: %v", err)
		}
		env := map[string]string{}
		for _, e := range main.Env {
			if !userEnv[e.Name] && !libraryEnv(e.Name) {
				env[e.Name] = e.Value
			}
		}
		if err := c.CheckEnv(o.GetName(), env); err != nil {
			t.Errorf("accepted but refused by the engine: %v", err)
		}
	}
}

// FuzzContracts drives the builders as FuzzService does: every vLLM and
// TEI Service that Objects accepts must render a command line and an
// environment the engine's contract accepts.
func FuzzContracts(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add(seed)
	}
	contracts := map[string]*contract.Contract{}
	for _, name := range []string{"vllm", "tei", "sglang"} {
		c, err := contract.Load("testdata/contracts/" + name + ".tsv")
		require.NoError(f, err)
		contracts[name] = c
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		svc := buildService(data, "fuzz", false)
		objs, err := svc.Objects()
		if err != nil {
			return
		}
		checkRendered(t, contracts, svc, objs)
	})
}
