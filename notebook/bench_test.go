package notebook_test

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"strconv"
	"testing"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/vgpu"
)

// BenchmarkRender1000 renders 1,000 notebooks per operation — a department's
// worth, a third each of Jupyter on an H100, code-server on a HAMi A100 slice
// and RStudio on CPU — from builders made once.
func BenchmarkRender1000(b *testing.B) {
	nbs := make([]*notebook.Notebook, 1000)
	for i := range nbs {
		user := "user" + strconv.Itoa(i)
		switch i % 3 {
		case 0:
			nbs[i] = notebook.Jupyter(user+"-lab", user).On(hardware.H100).Accelerators(1)
		case 1:
			nbs[i] = notebook.VSCode(user+"-code", user).Slice(vgpu.Slice(hardware.A100_80G).Memory("20Gi").Cores(30))
		default:
			nbs[i] = notebook.RStudio(user+"-r", user).CPU("4").Memory("16Gi")
		}
		nbs[i].Namespace("team-a").Credential(pod.SecretKeyRef{Name: user + "-credential", Key: "token"}).
			Storage("50Gi", "fast-ssd").MaxLifetime(72 * 3600e9).
			AllowNamespace(map[string]string{"kubernetes.io/metadata.name": "istio-system"})
	}
	b.Run("cube", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, nb := range nbs {
				if _, err := nb.Objects(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	// The baseline is the least any builder that returns fresh objects
	// can cost: deep copies of objects already rendered, with no
	// validation and no rendering.
	rendered := make([][]client.Object, len(nbs))
	for i, nb := range nbs {
		objs, err := nb.Objects()
		if err != nil {
			b.Fatal(err)
		}
		rendered[i] = objs
	}
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, objs := range rendered {
				for _, o := range objs {
					_ = o.DeepCopyObject()
				}
			}
		}
	})
}
