package serve_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/serve"
)

// Each engine picks its image for the accelerator: vLLM takes the vendor's
// vLLM build the hardware catalogue knows (Hygon DCU, MetaX), and every
// engine without a build for a vendor's devices refuses them by the image
// field, naming the engine and the accelerator, instead of rendering its
// CUDA image there. A caller's Image is always used.
func TestEnginesPickTheirImageForTheAccelerator(t *testing.T) {
	image := func(t *testing.T, s *serve.Service) string {
		t.Helper()
		objs, err := s.Objects()
		require.NoError(t, err)
		return objs[0].(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Image
	}
	for _, p := range []hardware.Profile{hardware.HygonK100, hardware.HygonZ100, hardware.MetaXC500} {
		want, err := p.Image(hardware.FrameworkVLLM)
		require.NoError(t, err)
		assert.Equal(t, want, image(t, serve.VLLM("chat", "Qwen/Qwen2.5-7B-Instruct").On(p).Accelerators(1)), p.Name)
	}
	assert.Equal(t, serve.DefaultVLLMImage, image(t, serve.VLLM("chat", "Qwen/Qwen2.5-7B-Instruct").On(hardware.H100).Accelerators(1)))
	assert.Equal(t, serve.DefaultVLLMAscendImage, image(t, serve.VLLM("chat", "Qwen/Qwen2.5-7B-Instruct").On(hardware.Ascend910B3).Accelerators(1)))

	engines := map[string]func(p hardware.Profile) *serve.Service{
		"vLLM": func(p hardware.Profile) *serve.Service {
			return serve.VLLM("chat", "Qwen/Qwen2.5-7B-Instruct").On(p).Accelerators(1)
		},
		"SGLang": func(p hardware.Profile) *serve.Service {
			return serve.SGLang("chat", "Qwen/Qwen2.5-7B-Instruct").On(p).Accelerators(1)
		},
		"TGI": func(p hardware.Profile) *serve.Service {
			return serve.TGI("chat", "Qwen/Qwen2.5-7B-Instruct").On(p).Accelerators(1)
		},
		"TEI": func(p hardware.Profile) *serve.Service {
			return serve.TEI("embed", "BAAI/bge-m3").On(p).Accelerators(1)
		},
	}
	for _, p := range []hardware.Profile{
		hardware.CambriconMLU370, hardware.CambriconMLU590, hardware.KunlunxinP800, hardware.KunlunxinR200,
		hardware.MetaXC500, hardware.HygonK100, hardware.MooreThreadsS4000, hardware.EnflameS60, hardware.IluvatarBIV150,
	} {
		for title, mk := range engines {
			if title == "vLLM" && (p.Vendor == hardware.Hygon || p.Vendor == hardware.MetaX) {
				continue // the catalogue has its vLLM build
			}
			_, err := mk(p).Objects()
			require.Error(t, err, "%s on %s", title, p.Name)
			assert.Contains(t, err.Error(), "spec.image: Required value: cube knows no "+title+" image for "+string(p.Vendor)+" "+p.Name, "%s on %s", title, p.Name)
			assert.Equal(t, "registry.example/own:1", image(t, mk(p).Image("registry.example/own:1")), "%s on %s", title, p.Name)
		}
	}
	// A profile whose vendor image was cleared refuses vLLM too.
	bare := hardware.MetaXC500.WithImages(hardware.Images{})
	_, err := serve.VLLM("chat", "Qwen/Qwen2.5-7B-Instruct").On(bare).Accelerators(1).Objects()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WithImages")
}
