package serve_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/vgpu"
)

// script reads a builder program from fuzz bytes: each byte picks an
// operation or an argument; when the bytes run out every read returns the
// zero choice, so any input is a valid program.
type script struct {
	data []byte
	pos  int
}

func (s *script) byte() byte {
	if s.pos >= len(s.data) {
		return 0
	}
	b := s.data[s.pos]
	s.pos++
	return b
}

func (s *script) done() bool { return s.pos >= len(s.data) }

func (s *script) pick(n int) int { return int(s.byte()) % n }

// num is a small count, a boundary or a large value.
func (s *script) num() int {
	switch b := s.byte(); {
	case b < 200:
		return int(b % 20)
	case b < 220:
		return -int(b % 5)
	case b < 240:
		return 1 << (b % 24)
	default:
		return []int{math.MaxInt32, math.MinInt32, 70000, 65535, 131072, 163840, 8_000_000}[b%7]
	}
}

var fuzzStrings = []string{
	"", "a", "qwen", "Bad_Name", "x y", "fp8", "fp8_e4m3", "fp8_e5m2", "auto", "bfloat16", "float16",
	"awq", "ascend", "gptq", "hf://org/adapter", "org/adapter", "pvc://models/x", "pvc://adapters/a/v1",
	"s3://bucket/prefix", "modelscope://org/m", "ollama://qwen2.5:7b", "http://minio:9000", "https://hf-mirror.com",
	"--api-key", "sk-live-1", "$(KEY)", "--max-num-seqs", "64", "8", "16Gi", "-1", "1e3", "team-a", "volcano",
	"eth0", "HF_TOKEN", "VLLM_API_KEY", "MY_VAR", "ü", "/data", "relative", "5m", "-1s", "none", "poll", "explicit",
	strings.Repeat("a", 70), "a.b", "1025", "http", "metrics",
	"https://me:" + fuzzSecret + "@hf-mirror.com", "http://" + fuzzSecret + "@minio:9000", "NaN", "+Inf", "--port",
	"fp4", "forever", "us-east-1",
}

// fuzzSecret stands for a credential a caller put where it does not
// belong; no accepted Service may render it.
const fuzzSecret = "hunter2s3cr3t"

// float is a fraction, a boundary or not a number at all.
func (s *script) float() float64 {
	return []float64{0.5, 0.9, 1, 0, -0.1, 1.5, math.NaN(), math.Inf(1), math.Inf(-1), 1e-300}[s.pick(10)]
}

func (s *script) str() string { return fuzzStrings[s.pick(len(fuzzStrings))] }

var fuzzModels = []string{
	"Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-70B-Instruct",
	"deepseek-ai/DeepSeek-V3", "qwen2.5:7b", "pvc://models/qwen", "s3://models/qwen", "modelscope://Qwen/Qwen2.5-7B-Instruct",
	"hf://Qwen/Qwen2.5-7B-Instruct", "s3://Bad_Bucket/x", "my-org/my-model", "", "ftp://x/y",
}

var fuzzProfiles = []hardware.Profile{
	hardware.H100, hardware.L4, hardware.A100_80G, hardware.T4, hardware.Ascend910B3, hardware.Ascend310P3, hardware.CPU,
	hardware.L4.PerNode(1), hardware.MetaXC500, hardware.HygonK100, hardware.CambriconMLU590,
}

func (s *script) slice() *vgpu.Spec {
	card := []hardware.Profile{hardware.A100_80G, hardware.H100, hardware.Ascend910B3}[s.pick(3)]
	switch s.pick(5) {
	case 0:
		return vgpu.Slice(card).Memory(s.str()).Cores(s.num())
	case 1:
		return vgpu.Slice(card).Memory("20Gi").Accelerators(s.num())
	case 2:
		return vgpu.MIG(card, []string{"1g.10gb", "3g.40gb", "7g.80gb", "bad"}[s.pick(4)]).Accelerators(s.num())
	case 3:
		return vgpu.Slice(card).Memory("10Gi").Backend(vgpu.Volcano)
	default:
		return nil
	}
}

func (s *script) planOptions() []serve.PlanOption {
	var opts []serve.PlanOption
	for range s.pick(3) {
		switch s.pick(6) {
		case 0:
			opts = append(opts, serve.ContextLength(s.num()))
		case 1:
			opts = append(opts, serve.MemoryUtilization(s.float()))
		case 2:
			opts = append(opts, serve.MaxNodes(s.num()))
		case 3:
			opts = append(opts, serve.KVCacheDType(models.DType(s.str())))
		case 4:
			opts = append(opts, serve.MaxBatchedTokens(s.num()))
		case 5:
			opts = append(opts, serve.TensorParallel(s.num()))
		}
	}
	return opts
}

// buildService runs the program in data on a Service named name. With
// sameNamespace it never calls Namespace, so the objects land where the
// client puts them.
func buildService(data []byte, name string, sameNamespace bool) *serve.Service {
	s := &script{data: data}
	model := fuzzModels[s.pick(len(fuzzModels))]
	svc := []func(string, string) *serve.Service{serve.VLLM, serve.SGLang, serve.TGI, serve.Ollama, serve.MindIE, serve.Triton, serve.TEI}[s.pick(7)](name, model)
	if s.pick(16) == 0 {
		// Not made by a constructor: Objects says so. Its pod settings are
		// not chained here: pod.Builder's methods return the embedding
		// builder that Init recorded, nil on a zero value, so a second
		// chained call dereferences nil inside package pod.
		return (&serve.Service{}).TensorParallel(s.num()).MaxModelLen(s.num())
	}
	for i := 0; i < 40 && !s.done(); i++ {
		switch s.pick(44) {
		case 0:
			svc = svc.Replicas(s.num())
		case 1:
			svc = svc.TensorParallel(s.num())
		case 2:
			svc = svc.PipelineParallel(s.num())
		case 3:
			svc = svc.Nodes(s.num())
		case 4:
			svc = svc.MaxModelLen(s.num())
		case 5:
			svc = svc.MemoryUtilization(s.float())
		case 6:
			svc = svc.DType(s.str())
		case 7:
			svc = svc.Quantization(s.str())
		case 8:
			svc = svc.KVCacheDType(s.str())
		case 9:
			svc = svc.PrefixCaching(s.pick(2) == 0)
		case 10:
			svc = svc.LoRA(s.str(), s.str())
		case 11:
			svc = svc.ServedModelName(s.str())
		case 12:
			svc = svc.TrustRemoteCode()
		case 13:
			svc = svc.AddArgs(s.str(), s.str())
		case 14:
			svc = svc.HFToken(pod.SecretKeyRef{Name: s.str(), Key: s.str()})
		case 15:
			svc = svc.HFEndpoint(s.str())
		case 16:
			svc = svc.APIKey(pod.SecretKeyRef{Name: s.str(), Key: s.str()})
		case 17:
			svc = svc.S3Credentials(pod.SecretKeyRef{Name: s.str(), Key: "AWS_ACCESS_KEY_ID"}, pod.SecretKeyRef{Name: s.str(), Key: "AWS_SECRET_ACCESS_KEY"}).S3Endpoint(s.str()).S3Region(s.str())
		case 18:
			svc = svc.ModelCache(s.str())
		case 19:
			svc = svc.StartupTimeout(time.Duration(s.num()) * time.Minute)
		case 20:
			svc = svc.DisruptionBudget(s.num())
		case 21:
			svc = svc.Auto(s.planOptions()...)
		case 22:
			m, err := models.Lookup(fuzzModels[s.pick(4)])
			if err == nil {
				switch s.pick(4) {
				case 0:
					m.Layers = s.num()
				case 1:
					m.ContextLength = s.num()
				case 2:
					m.MoE.DenseLayers = s.num()
				}
				svc = svc.ModelFacts(m)
			}
		case 23:
			svc = svc.RankTable(s.str())
		case 24:
			svc = svc.ModelControl(s.str(), s.str())
		case 25:
			svc = svc.KeepAlive(time.Duration(s.num()) * time.Second)
		case 26:
			metrics := []serve.ScaleMetric{serve.ScaleOnQueue(s.str()), serve.ScaleOnCPU(s.num()),
				serve.ScaleOnMemory(s.num()), serve.ScaleOnPodMetric(s.str(), s.str())}
			svc = svc.Autoscale(s.num(), s.num(), metrics[:s.pick(len(metrics)+1)]...)
		case 27:
			svc = svc.On(fuzzProfiles[s.pick(len(fuzzProfiles))])
		case 28:
			svc = svc.Accelerators(s.num())
		case 29:
			svc = svc.Slice(s.slice())
		case 30:
			svc = svc.Image(s.str())
		case 31:
			svc = svc.Env(s.str(), s.str())
		case 32:
			svc = svc.CPU(s.str()).Memory(s.str())
		case 33:
			svc = svc.Port(s.str(), int32(s.num()))
		case 34:
			if !sameNamespace {
				svc = svc.Namespace(s.str())
			}
		case 35:
			svc = svc.Label(s.str(), s.str()).Annotation(s.str(), s.str())
		case 36:
			svc = svc.Scheduler(s.str()).Queue(s.str())
		case 37:
			svc = svc.NodeSelector(s.str(), s.str())
		case 38:
			svc = svc.SharedMemory(s.str())
		case 39:
			svc = svc.Fabric([]hardware.Fabric{hardware.RoCE(), hardware.InfiniBand(), hardware.TCP(hardware.SocketInterface(s.str()))}[s.pick(3)])
		case 40:
			svc = svc.HostNetwork(s.pick(2) == 0)
		case 41:
			svc = svc.PVC(s.str(), s.str())
		case 42:
			svc = svc.EnvFromSecret(s.str(), pod.SecretKeyRef{Name: s.str(), Key: s.str()})
		case 43:
			svc = svc.AddTritonModel(serve.TritonVLLMModel(s.str()))
		}
	}
	return svc
}

// exercise calls everything that reads a Service; none of it may panic.
func exercise(svc *serve.Service) error {
	_, _ = serve.URL(svc)
	_, _ = serve.AutoPlan(svc)
	_, err := svc.Objects()
	return err
}

var fuzzSeeds = [][]byte{
	{},
	{0, 0, 27, 0, 28, 1},
	{0, 0, 27, 0, 21},
	{3, 1, 27, 0, 28, 2, 3, 2, 1, 8},
	{4, 4, 27, 4, 28, 8, 3, 2, 23, 2},
	{5, 0, 27, 1, 29, 0, 1, 2, 1, 2},
	{1, 0, 13, 23, 24, 16, 1, 2},
	{0, 15, 27, 0},
	{2, 0, 27, 1, 28, 2, 1, 1, 10, 13, 14},
}

// FuzzService drives the Service builders through random sequences of
// calls with hostile arguments: nothing panics, and Objects either returns
// objects or says why.
func FuzzService(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		svc := buildService(data, "fuzz", false)
		objs, err := svc.Objects()
		if err == nil {
			require.NotEmpty(t, objs)
			var buf bytes.Buffer
			require.NoError(t, cube.Render(&buf, svc))
			require.NotContains(t, buf.String(), fuzzSecret, "program %v rendered a credential", data)
		} else {
			require.NotContains(t, err.Error(), fuzzSecret, "program %v quoted a credential back", data)
		}
		require.NotPanics(t, func() { _ = exercise(svc) })
	})
}

// TestFuzzCorpusAppliesStrict generates programs, and every Service whose
// Objects accept it must be accepted by the real API server with strict
// field validation: cube's validation may refuse more than Kubernetes, never
// less.
func TestFuzzCorpusAppliesStrict(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cl := cube.NewFromClient(env.Client, cube.Namespace(ns))
	rng := rand.New(rand.NewPCG(12, 20))
	accepted := 0
	for i := 0; i < 40000 && accepted < 300; i++ {
		// Short programs: most long ones hold some hostile argument.
		data := make([]byte, 2+rng.IntN(24))
		for j := range data {
			data[j] = byte(rng.IntN(256))
		}
		svc := buildService(data, fmt.Sprintf("f%d", i), true)
		if _, err := svc.Objects(); err != nil {
			continue
		}
		accepted++
		// A server-side dry run validates as strictly without keeping
		// anything (the test API server's Service IP range is small).
		_, err := cl.Apply(t.Context(), svc, cube.DryRun)
		require.NoError(t, err, "program %v was accepted by Objects", data)
	}
	require.GreaterOrEqual(t, accepted, 20, "the generator must reach accepted Services")
	t.Logf("%d accepted Services applied", accepted)
}

// FuzzPlan gives Plan model facts and options from the fuzzer, boundary
// and overflowing values included: it never panics, and a plan it returns
// holds together (no negative byte count, the weights, reserve and one
// full-length sequence inside vLLM's share, the layout within the node).
func FuzzPlan(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3, 250, 251, 252, 253, 254, 255})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &script{data: data}
		m, err := models.Lookup(fuzzModels[s.pick(4)])
		require.NoError(t, err)
		big := func() int64 {
			return []int64{1, 1 << 20, 7_000_000_000, 1 << 40, 1 << 60, math.MaxInt64, 0, -1}[s.pick(8)]
		}
		for range s.pick(6) {
			switch s.pick(8) {
			case 0:
				m.Parameters = big()
			case 1:
				m.Layers = s.num()
			case 2:
				m.VocabSize = s.num()
			case 3:
				m.IntermediateSize = s.num()
			case 4:
				m.KVHeads = s.num()
			case 5:
				m.HeadDim = s.num()
			case 6:
				m.ContextLength = s.num()
			case 7:
				m.AttentionHeads = s.num()
			}
		}
		acc := fuzzProfiles[s.pick(len(fuzzProfiles))]
		opts := s.planOptions()
		var p serve.PlanResult
		require.NotPanics(t, func() { p, err = serve.Plan(m, acc, opts...) })
		if err != nil {
			return
		}
		for name, v := range map[string]int64{
			"usable": p.UsableBytesPerDevice, "weights": p.WeightBytesPerDevice, "reserve": p.ReserveBytesPerDevice,
			"kv": p.KVCacheBytesPerDevice, "kv per token": p.KVBytesPerTokenPerDevice, "blocks": p.KVBlocks,
		} {
			require.GreaterOrEqual(t, v, int64(0), "%s in %+v", name, p)
		}
		require.GreaterOrEqual(t, p.KVTokenCapacity, int64(p.ContextLength), "%+v", p)
		require.LessOrEqual(t, p.WeightBytesPerDevice, p.UsableBytesPerDevice, "%+v", p)
		require.LessOrEqual(t, p.AcceleratorsPerNode, acc.MaxPerNode, "%+v", p)
		require.Positive(t, p.TensorParallel)
		require.Positive(t, p.PipelineParallel)
	})
}
