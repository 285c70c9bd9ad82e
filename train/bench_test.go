package train_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	yamlv2 "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/cputime"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/train"
)

func benchJob(name string) *train.PyTorchJob {
	return train.PyTorch(name).
		Image("registry.example.com/llm/train:2.4").
		Torchrun("sft.py", "--model", "/models/llama").
		Workers(3).
		On(hardware.H100).Accelerators(8).
		Fabric(hardware.InfiniBand()).
		PVC("datasets", "/data").
		EnvFromSecret("HF_TOKEN", pod.SecretKeyRef{Name: "hf", Key: "token"}).
		Gang().Queue("team-a")
}

// BenchmarkRender1000PyTorchJobs builds, validates and renders to YAML a
// thousand 4-replica PyTorchJobs on H100 with InfiniBand per iteration:
// with cube.Render (cube) and, in the same run, with what Render did before
// it wrote YAML itself (baseline: each job to unstructured, then yaml.v2)
// and with sigs.k8s.io/yaml. cpu-µs/job counts CPU time, all threads: what
// a job costs on one core of a shared machine; cube/... are the ratios of
// it.
func BenchmarkRender1000PyTorchJobs(b *testing.B) {
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("job-%d", i)
	}
	cpu := map[string]time.Duration{}
	for _, run := range []struct {
		name   string
		render func(*train.PyTorchJob) error
	}{
		{"cube", func(j *train.PyTorchJob) error { return cube.Render(io.Discard, j) }},
		{"baseline", func(j *train.PyTorchJob) error {
			objs, err := j.Objects()
			if err != nil {
				return err
			}
			u, err := cube.ToUnstructured(objs[0])
			if err != nil {
				return err
			}
			_, err = yamlv2.Marshal(u.Object)
			return err
		}},
		{"sigs.k8s.io-yaml", func(j *train.PyTorchJob) error {
			objs, err := j.Objects()
			if err != nil {
				return err
			}
			_, err = sigsyaml.Marshal(objs[0])
			return err
		}},
	} {
		b.Run(run.name, func(b *testing.B) {
			b.ReportAllocs()
			meter := cputime.Start()
			for b.Loop() {
				for _, name := range names {
					if err := run.render(benchJob(name)); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "µs/job")
			if used, ok := meter.Elapsed(); ok {
				cpu[run.name] = used / time.Duration(b.N)
				b.ReportMetric(float64(used.Microseconds())/float64(b.N)/1000, "cpu-µs/job")
			}
			if ours := cpu["cube"]; ours > 0 && run.name != "cube" {
				b.ReportMetric(float64(ours)/float64(cpu[run.name]), "cube/"+run.name)
			}
		})
	}
}

// BenchmarkBuild1000PyTorchJobs is the builders' share of the above:
// validation and the typed objects, without YAML (cube), beside, in the
// same run, the floor of writing the same objects by hand (baseline: a copy
// of the rendered job renamed and given the operator's defaults, with no
// validation at all). cube/baseline is what the builder's checks and
// hardware placement cost over that floor.
func BenchmarkBuild1000PyTorchJobs(b *testing.B) {
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("job-%d", i)
	}
	ref, err := benchJob("ref").Build()
	if err != nil {
		b.Fatal(err)
	}
	per := map[string]time.Duration{}
	for _, run := range []struct {
		name  string
		build func(name string) error
	}{
		{"cube", func(name string) error { _, err := benchJob(name).Objects(); return err }},
		{"baseline", func(name string) error {
			job := ref.DeepCopy()
			job.Name = name
			kubeflowv1.SetObjectDefaults_PyTorchJob(job)
			return nil
		}},
	} {
		b.Run(run.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, name := range names {
					if err := run.build(name); err != nil {
						b.Fatal(err)
					}
				}
			}
			per[run.name] = b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "µs/job")
			if ours := per["cube"]; ours > 0 && run.name != "cube" && per[run.name] > 0 {
				b.ReportMetric(float64(ours)/float64(per[run.name]), "cube/"+run.name)
			}
		})
	}
}

// BenchmarkApply200PyTorchJobs creates 200 PyTorchJobs on the test API
// server with cube.Client.Apply (render, validate, server-side apply with
// strict validation, release record) and the same 200 jobs, rendered once,
// with controller-runtime's server-side apply alone, in the same run, and
// reports both times and their ratio; and two floors, measured the same
// way: the floor of any apply that records a release before writing it,
// the same SSA preceded by the create of one small ConfigMap each
// (record-first-floor/ssa), and the floor of cube's design, which also
// reads the namespace for its Pod Security check at the same time as it
// writes the record (record-and-check-floor/ssa). cube/record-and-check
// is then what cube's own code adds.
func BenchmarkApply200PyTorchJobs(b *testing.B) {
	env := testenv.Get(b)
	ns := env.Namespace(b)
	// Delete the jobs before the namespace cleanup, which has a short
	// deadline for everything the namespace holds.
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		for _, obj := range []client.Object{&kubeflowv1.PyTorchJob{}, &corev1.ConfigMap{}} {
			if err := env.Client.DeleteAllOf(ctx, obj, client.InNamespace(ns)); err != nil {
				b.Errorf("delete %T: %v", obj, err)
			}
		}
	})
	c := cube.NewFromClient(env.Client, cube.Namespace(ns))
	ctx := b.Context()
	var cubeTime, ssaTime, floorTime, checkFloorTime time.Duration
	round := 0
	for b.Loop() {
		round++
		builders := make([]*train.PyTorchJob, 200)
		rendered := make([]client.Object, 200)
		floorJobs := make([]client.Object, 200)
		checkJobs := make([]client.Object, 200)
		for i := range builders {
			builders[i] = benchJob(fmt.Sprintf("cube-%d-%d", round, i))
			objs, err := benchJob(fmt.Sprintf("ssa-%d-%d", round, i)).Namespace(ns).Objects()
			if err != nil {
				b.Fatal(err)
			}
			rendered[i] = objs[0]
			if objs, err = benchJob(fmt.Sprintf("floor-%d-%d", round, i)).Namespace(ns).Objects(); err != nil {
				b.Fatal(err)
			}
			floorJobs[i] = objs[0]
			if objs, err = benchJob(fmt.Sprintf("check-%d-%d", round, i)).Namespace(ns).Objects(); err != nil {
				b.Fatal(err)
			}
			checkJobs[i] = objs[0]
		}
		timed := func(total *time.Duration, f func() error) {
			start := time.Now()
			if err := f(); err != nil {
				b.Fatal(err)
			}
			*total += time.Since(start)
		}
		ssaApply := func(obj client.Object) error {
			u, err := cube.ToUnstructured(obj)
			if err != nil {
				return err
			}
			return env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("bench"))
		}
		record := func(name string) error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Data: map[string]string{"objects": "kubeflow.org/v1 PyTorchJob " + ns + " " + name}}
			return env.Client.Create(ctx, cm, client.FieldOwner("bench"))
		}
		// Job by job, the four ways take turns going first, so that a
		// change in the machine's load (it is shared) falls on all four.
		for i := range builders {
			runs := []func(){
				func() { timed(&cubeTime, func() error { _, err := c.Apply(ctx, builders[i]); return err }) },
				func() { timed(&ssaTime, func() error { return ssaApply(rendered[i]) }) },
				// The floor of any apply that records a release before its
				// objects: one small write (a ConfigMap) before the object's.
				func() {
					timed(&floorTime, func() error {
						if err := record(floorJobs[i].GetName()); err != nil {
							return err
						}
						return ssaApply(floorJobs[i])
					})
				},
				// The floor of cube's design: the record's write and the
				// read of the namespace's Pod Security labels at once,
				// then the object's.
				func() {
					timed(&checkFloorTime, func() error {
						var nsObj corev1.Namespace
						read := make(chan error, 1)
						go func() { read <- env.Client.Get(ctx, client.ObjectKey{Name: ns}, &nsObj) }()
						werr := record(checkJobs[i].GetName())
						if err := errors.Join(werr, <-read); err != nil {
							return err
						}
						return ssaApply(checkJobs[i])
					})
				},
			}
			for k := range runs {
				runs[(k+i)%len(runs)]()
			}
		}
	}
	b.ReportMetric(float64(cubeTime.Milliseconds())/float64(round), "cube-ms/200")
	b.ReportMetric(float64(ssaTime.Milliseconds())/float64(round), "ssa-ms/200")
	b.ReportMetric(float64(cubeTime)/float64(ssaTime), "cube/ssa")
	b.ReportMetric(float64(floorTime)/float64(ssaTime), "record-first-floor/ssa")
	b.ReportMetric(float64(checkFloorTime)/float64(ssaTime), "record-and-check-floor/ssa")
	b.ReportMetric(float64(cubeTime)/float64(checkFloorTime), "cube/record-and-check")
}
