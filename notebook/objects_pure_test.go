package notebook_test

import (
	"testing"
	"time"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/snapshot"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/vgpu"
)

// Objects leaves every notebook as it was: defaults (the image, the home
// claim, the port) go into the objects, never back into the builder, and
// the objects returned are fresh, so changing them changes nothing.
func TestObjectsLeavesTheNotebookAlone(t *testing.T) {
	istio := map[string]string{"kubernetes.io/metadata.name": "istio-system"}
	ref := pod.SecretKeyRef{Name: "lab-credential", Key: "token"}
	for name, nb := range map[string]*notebook.Notebook{
		"jupyter on H100": notebook.Jupyter("lab", "alice").On(hardware.H100).Accelerators(1),
		"vscode on a slice": notebook.VSCode("code", "bob").
			Slice(vgpu.Slice(hardware.A100_80G).Memory("20Gi").Cores(30)),
		"rstudio with storage": notebook.RStudio("r", "carol").Storage("50Gi", "fast-ssd").MaxLifetime(72 * time.Hour),
	} {
		t.Run(name, func(t *testing.T) {
			nb.Namespace("team-a").Credential(ref).AllowNamespace(istio)
			before := snapshot.Of(nb)
			first, err := nb.Objects()
			if err != nil {
				t.Fatal(err)
			}
			if after := snapshot.Of(nb); after != before {
				t.Fatalf("Objects changed the notebook:\nbefore %s\nafter  %s", before, after)
			}
			first[0].SetLabels(map[string]string{"changed": "yes"})
			second, err := nb.Objects()
			if err != nil {
				t.Fatal(err)
			}
			if second[0].GetLabels()["changed"] == "yes" {
				t.Fatal("the objects of one call are the objects of the next")
			}
			if after := snapshot.Of(nb); after != before {
				t.Fatal("changing the returned objects changed the notebook")
			}
		})
	}
}
