package niltest

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/market"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/ops"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/pipeline/local"
	"github.com/cubestudio/cube/rag"
	"github.com/cubestudio/cube/rag/bpe"
	"github.com/cubestudio/cube/rag/embed"
	"github.com/cubestudio/cube/rag/milvus"
	"github.com/cubestudio/cube/rag/split"
	"github.com/cubestudio/cube/rag/store"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
	"github.com/cubestudio/cube/tune"
	"github.com/cubestudio/cube/vgpu"
)

// types are the builders and clients users hold: their pointer types.
var types = []any{
	(*cube.Client)(nil), (*tenant.Spec)(nil), (*cubetest.Cluster)(nil),
	(*label.Client)(nil), (*label.Config)(nil), (*label.MLBackendServer)(nil), (*label.StudioServer)(nil),
	(*llm.FineTune)(nil), (*llm.RL)(nil),
	(*market.DownloadJob)(nil), (*market.EvaluationJob)(nil), (*market.Registry)(nil),
	(*notebook.Notebook)(nil), (*ops.LeaseSpec)(nil),
	(*pipeline.ContainerStep)(nil), (*pipeline.FuncStep)(nil), (*pipeline.Pipeline)(nil), (*pipeline.WorkloadStep)(nil),
	(*pipeline.ServeStep)(nil), (*argo.WorkflowBuilder)(nil), (*argo.CronWorkflowBuilder)(nil), (*local.Result)(nil),
	(*embed.Cache)(nil), (*embed.FeatureHasher)(nil), (*rag.HTTPReranker)(nil), (*rag.KnowledgeBase)(nil),
	(*rag.Library)(nil), (*store.Local)(nil), (*split.MarkdownSplitter)(nil), (*embed.OpenAI)(nil),
	(*split.RecursiveSplitter)(nil), (*split.TokenSplitter)(nil), (*bpe.Tokenizer)(nil), (*milvus.Config)(nil),
	(*inference.Client)(nil), (*serve.Service)(nil), (*serve.Split)(nil),
	(*train.ColossalAIJob)(nil), (*train.DeepSpeedJob)(nil), (*train.MPIJob)(nil), (*train.MXNetJob)(nil),
	(*train.PaddleJob)(nil), (*train.PyTorchJob)(nil), (*train.RayJob)(nil), (*train.TFJob)(nil),
	(*train.VolcanoJob)(nil), (*train.XGBoostJob)(nil),
	(*tune.Experiment)(nil), (*tune.Local)(nil), (*vgpu.Spec)(nil),
}

func TestNilAndZeroReceiversDoNotPanic(t *testing.T) {
	ctxType := reflect.TypeFor[context.Context]()
	for _, typed := range types {
		pt := reflect.TypeOf(typed)
		for _, recv := range []struct {
			what string
			v    reflect.Value
		}{{"nil", reflect.Zero(pt)}, {"zero", reflect.New(pt.Elem())}} {
			promoted := promotedMethods(pt.Elem())
			// go-openai's own methods, which inference.Client embeds: a zero
			// Client has no *openai.Client under them (use NewClient).
			foreign := map[string]bool{}
			if pt == reflect.TypeFor[*inference.Client]() {
				foreign = promoted
			}
			for i := range pt.NumMethod() {
				m := pt.Method(i)
				if recv.what == "nil" && (promoted[m.Name] || valueMethod(pt.Elem(), m.Name)) {
					// Go reaches an embedded field, or the value of a
					// value method, through the nil pointer before the
					// method runs: no method can guard it. The zero
					// value covers these methods.
					continue
				}
				if foreign[m.Name] {
					continue
				}
				name := fmt.Sprintf("(%s %s).%s", recv.what, pt, m.Name)
				args := []reflect.Value{recv.v}
				for a := 1; a < m.Type.NumIn(); a++ {
					in := m.Type.In(a)
					if m.Type.IsVariadic() && a == m.Type.NumIn()-1 {
						break
					}
					if in == ctxType {
						args = append(args, reflect.ValueOf(context.Background()))
						continue
					}
					args = append(args, reflect.Zero(in))
				}
				done := make(chan any, 1)
				go func() {
					defer func() { done <- recover() }()
					m.Func.Call(args)
				}()
				select {
				case p := <-done:
					if p != nil {
						t.Errorf("%s panics: %v", name, p)
					}
				case <-time.After(5 * time.Second):
					t.Errorf("%s has not returned in 5 s", name)
				}
			}
		}
	}
}

// promotedMethods are the methods t's embedded fields give it.
func promotedMethods(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	if t.Kind() != reflect.Struct {
		return out
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.Anonymous {
			continue
		}
		ft := f.Type
		if ft.Kind() != reflect.Pointer {
			ft = reflect.PointerTo(ft)
		}
		for j := range ft.NumMethod() {
			out[ft.Method(j).Name] = true
		}
	}
	return out
}

// valueMethod says whether t (not only *t) has the method.
func valueMethod(t reflect.Type, name string) bool {
	_, ok := t.MethodByName(name)
	return ok
}
