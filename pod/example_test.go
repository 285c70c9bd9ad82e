package pod_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube/pod"
)

// Batch is a user-defined builder: embedding pod.Builder gives it every
// shared pod setting, chained fluently.
type Batch struct{ pod.Builder[Batch] }

func NewBatch(name string) *Batch {
	b := &Batch{}
	b.Init(b, "batch", name)
	return b
}

func ExampleBuilder() {
	b := NewBatch("etl").
		Image("python:3.12").
		Command("python", "etl.py").
		EnvFromSecret("DB_PASSWORD", "db", "password").
		CPU("2").Memory("4Gi").
		PVC("warehouse", "/data")
	tmpl, errs := b.Template(field.NewPath("spec", "template"), pod.TemplateOptions{Container: "etl"})
	if len(errs) > 0 {
		fmt.Println(errs.ToAggregate())
		return
	}
	out, _ := yaml.Marshal(tmpl.Spec.Containers[0])
	fmt.Print(string(out))
	// Output:
	// command:
	// - python
	// - etl.py
	// env:
	// - name: DB_PASSWORD
	//   valueFrom:
	//     secretKeyRef:
	//       key: password
	//       name: db
	// image: python:3.12
	// name: etl
	// resources:
	//   limits:
	//     cpu: "2"
	//     memory: 4Gi
	//   requests:
	//     cpu: "2"
	//     memory: 4Gi
	// volumeMounts:
	// - mountPath: /data
	//   name: pvc-warehouse
}

func ExampleBuilder_Template_errors() {
	_, errs := NewBatch("etl").CPU("two").Template(field.NewPath("spec", "template"), pod.TemplateOptions{Container: "etl"})
	for _, e := range errs {
		fmt.Println(e)
	}
	// Output:
	// spec.template.spec.containers[0].image: Required value: an image is required
	// spec.template.spec.containers[0].resources.requests[cpu]: Invalid value: "two": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'
	// spec.template.spec.containers[0].resources.limits[cpu]: Invalid value: "two": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'
}
