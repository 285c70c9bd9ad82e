package serve

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/hardware"
)

// sameState reports whether a and b hold the same state, field by field
// through pointers, slices and maps, unexported fields included; where they
// differ it says where. A pointer to itself (the builder's self) is
// followed once; functions are the same when they are the same function.
func sameState(a, b reflect.Value, path string, seen map[[2]uintptr]bool) error {
	if a.Kind() != b.Kind() {
		return fmt.Errorf("%s: kind %s, then %s", path, a.Kind(), b.Kind())
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Errorf("%s: nil %v, then %v", path, a.IsNil(), b.IsNil())
			}
			return nil
		}
		key := [2]uintptr{a.Pointer(), b.Pointer()}
		if seen[key] {
			return nil
		}
		seen[key] = true
		return sameState(a.Elem(), b.Elem(), path, seen)
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Errorf("%s: nil %v, then %v", path, a.IsNil(), b.IsNil())
			}
			return nil
		}
		return sameState(a.Elem(), b.Elem(), path, seen)
	case reflect.Struct:
		for i := range a.NumField() {
			if err := sameState(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name, seen); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice, reflect.Array:
		if a.Kind() == reflect.Slice && a.IsNil() != b.IsNil() {
			return fmt.Errorf("%s: nil %v, then %v", path, a.IsNil(), b.IsNil())
		}
		if a.Len() != b.Len() {
			return fmt.Errorf("%s: %d elements, then %d", path, a.Len(), b.Len())
		}
		for i := range a.Len() {
			if err := sameState(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i), seen); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return fmt.Errorf("%s: %d entries (nil %v), then %d (nil %v)", path, a.Len(), a.IsNil(), b.Len(), b.IsNil())
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() {
				return fmt.Errorf("%s[%v]: gone", path, k)
			}
			if err := sameState(a.MapIndex(k), bv, fmt.Sprintf("%s[%v]", path, k), seen); err != nil {
				return err
			}
		}
		return nil
	case reflect.Func:
		if a.Pointer() != b.Pointer() {
			return fmt.Errorf("%s: another function", path)
		}
		return nil
	case reflect.String:
		if a.String() != b.String() {
			return fmt.Errorf("%s: %q, then %q", path, a.String(), b.String())
		}
	case reflect.Bool:
		if a.Bool() != b.Bool() {
			return fmt.Errorf("%s: %v, then %v", path, a.Bool(), b.Bool())
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if a.Int() != b.Int() {
			return fmt.Errorf("%s: %d, then %d", path, a.Int(), b.Int())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if a.Uint() != b.Uint() {
			return fmt.Errorf("%s: %d, then %d", path, a.Uint(), b.Uint())
		}
	case reflect.Float32, reflect.Float64:
		if a.Float() != b.Float() {
			return fmt.Errorf("%s: %v, then %v", path, a.Float(), b.Float())
		}
	default:
		return fmt.Errorf("%s: cannot compare a %s", path, a.Kind())
	}
	return nil
}

// renderer is a serve builder.
type renderer interface {
	Objects() ([]client.Object, error)
}

var editMindIE = func(c *MindIEConfig) { c.BackendConfig.ScheduleConfig.MaxBatchSize = 64 }

// Objects leaves the builder as it found it: a default (the image, the
// plan's layout, the context length, the probes' timeout) is worked out
// into locals, never stored. Each case is built twice; one builder renders
// twice and must still hold what its twin, never rendered, holds, and both
// renderings and the twin's must be equal.
func TestObjectsLeavesTheBuilderAlone(t *testing.T) {
	for name, mk := range map[string]func() renderer{
		"vllm auto across nodes": func() renderer {
			return VLLM("llama", "meta-llama/Llama-3.1-70B-Instruct").On(hardware.L4).Auto(ContextLength(131072)).
				Autoscale(1, 3, ScaleOnQueue("5"))
		},
		"vllm explicit": func() renderer {
			return VLLM("qwen", "Qwen/Qwen2.5-7B-Instruct").Namespace("team-a").On(hardware.H100).Accelerators(2).
				LoRA("a", "org/a").Replicas(3).
				StartupTimeout(time.Hour).AddArgs("--max-num-seqs", "64")
		},
		"vllm ascend across nodes": func() renderer {
			return VLLM("npu", "Qwen/Qwen2.5-72B-Instruct").On(hardware.Ascend910B3).Accelerators(8).Nodes(2)
		},
		"mindie": func() renderer {
			return MindIE("npu", "pvc://models/qwen").On(hardware.Ascend910B3).Accelerators(4).ConfigureMindIE(editMindIE)
		},
		"triton vllm": func() renderer {
			return Triton("t", "hf://Qwen/Qwen2.5-7B-Instruct").AddTritonModel(TritonVLLMModel("qwen")).On(hardware.L4).Accelerators(1)
		},
		"ollama": func() renderer {
			return Ollama("chat", "qwen2.5:7b").On(hardware.L4).Accelerators(1).KeepAlive(time.Hour)
		},
		"tei from s3": func() renderer {
			return TEI("embed", "s3://models/bge-m3").On(hardware.L4).Accelerators(1).ServedModelName("bge")
		},
		"split": func() renderer {
			return Canary("chat", VLLM("v1", "pvc://m/v1").On(hardware.L4).Accelerators(1), VLLM("v2", "pvc://m/v2").On(hardware.L4).Accelerators(1)).
				Gateway("gw", "infra").Weights(90, 10).RequestTimeout(time.Minute)
		},
	} {
		t.Run(name, func(t *testing.T) {
			rendered, twin := mk(), mk()
			first, err := rendered.Objects()
			require.NoError(t, err)
			second, err := rendered.Objects()
			require.NoError(t, err)
			assert.Equal(t, first, second, "a second Objects renders the same")
			assert.NoError(t, sameState(reflect.ValueOf(rendered), reflect.ValueOf(twin), "builder", map[[2]uintptr]bool{}),
				"Objects changed the builder")
			fresh, err := twin.Objects()
			require.NoError(t, err)
			assert.Equal(t, first, fresh)
			// The objects are the caller's: changing them changes neither
			// the builder nor the next rendering.
			first[0].SetName("changed")
			first[0].SetLabels(map[string]string{"changed": "yes"})
			again, err := rendered.Objects()
			require.NoError(t, err)
			assert.Equal(t, second, again)
		})
	}
}

// The comparison itself notices a changed setting, through the builder's
// pointers and maps.
func TestSameStateSeesAChange(t *testing.T) {
	a, b := VLLM("q", "pvc://m/q").LoRA("a", "org/a"), VLLM("q", "pvc://m/q").LoRA("a", "org/a")
	require.NoError(t, sameState(reflect.ValueOf(a), reflect.ValueOf(b), "builder", map[[2]uintptr]bool{}))
	b.loras[0].source = "org/b"
	assert.ErrorContains(t, sameState(reflect.ValueOf(a), reflect.ValueOf(b), "builder", map[[2]uintptr]bool{}), "builder.loras[0].source")
	b = VLLM("q", "pvc://m/q").LoRA("a", "org/a").Replicas(2)
	assert.ErrorContains(t, sameState(reflect.ValueOf(a), reflect.ValueOf(b), "builder", map[[2]uintptr]bool{}), "builder.replicas")
}
