package podspec_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/vgpu"
)

// A fuzz program is a byte string: whether to start from a job made by
// Init or a zero value, the template options, then setter calls, each an
// index into the setter table followed by the bytes its arguments are
// drawn from (dictionaries mixing valid and hostile values; bytes past
// the end read as zero).
type program = fuzzcorpus.Program

func pick[T any](p *program, values []T) T { return fuzzcorpus.Pick(p, values) }

var (
	fuzzInts     = []int{1, 2, 0, 8, -1, 65536, math.MaxInt32}
	fuzzStrings  = []string{"x", "", "train.py", "with space", "$(X)", strings.Repeat("a", 70), "ünï"}
	fuzzNames    = []string{"data", "a-b", "", "Bad_Name", strings.Repeat("n", 300), "1x"}
	fuzzKeys     = []string{"EPOCHS", "HF_TOKEN", "", "A=B", "app.kubernetes.io/name", "bad key!", "team"}
	fuzzValues   = []string{"3", "", "hf_abcdefghijklmnopqrstuvwxyz", "bad value!", strings.Repeat("v", 70)}
	fuzzQuantity = []string{"1", "16Gi", "500m", "", "-1", "lots", "0"}
	fuzzPaths    = []string{"/data", "/models", "", "relative", "/dev/shm", "/data"}
	fuzzProfiles = []hardware.Profile{hardware.H100, hardware.CPU, hardware.Ascend910B3, hardware.T4, hardware.H100.PerNode(0), {}}
	fuzzFabrics  = []hardware.Fabric{{}, hardware.InfiniBand(), hardware.RoCE(), hardware.TCP()}
	fuzzSlices   = []*vgpu.Spec{nil, vgpu.Slice(hardware.A100_80G).Memory("10Gi").Cores(30), vgpu.Slice(hardware.CPU), vgpu.Slice(hardware.A100_80G).MemoryPercent(250)}
	fuzzPolicies = []corev1.RestartPolicy{"", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever, corev1.RestartPolicyAlways, "Sometimes"}
)

// setters are the pod.Builder methods a program calls.
var setters = []func(j *job, p *program){
	func(j *job, p *program) { j.Image(pick(p, []string{"pytorch:2.4", "", "bad image", "busybox"})) },
	func(j *job, p *program) {
		j.ImagePullPolicy(pick(p, []corev1.PullPolicy{corev1.PullIfNotPresent, corev1.PullAlways, "Sometimes"}))
	},
	func(j *job, p *program) { j.Command(pick(p, fuzzStrings), pick(p, fuzzStrings)) },
	func(j *job, p *program) { j.Args(pick(p, fuzzStrings)) },
	func(j *job, p *program) { j.AddArgs(pick(p, fuzzStrings)) },
	func(j *job, p *program) { j.WorkingDir(pick(p, fuzzPaths)) },
	func(j *job, p *program) { j.Env(pick(p, fuzzKeys), pick(p, fuzzValues)) },
	func(j *job, p *program) {
		j.EnvFromSecret(pick(p, fuzzKeys), pod.SecretKeyRef{Name: pick(p, fuzzNames), Key: pick(p, []string{"token", ""})})
	},
	func(j *job, p *program) {
		j.EnvFromField(pick(p, fuzzKeys), pick(p, []string{"status.podIP", "", "spec.bogus"}))
	},
	func(j *job, p *program) { j.EnvFromSecretAll(pick(p, fuzzNames)) },
	func(j *job, p *program) { j.EnvFromConfigMap(pick(p, fuzzNames)) },
	func(j *job, p *program) { j.CPU(pick(p, fuzzQuantity)) },
	func(j *job, p *program) { j.Memory(pick(p, fuzzQuantity)) },
	func(j *job, p *program) {
		j.Resource(pick(p, []corev1.ResourceName{corev1.ResourceEphemeralStorage, "nvidia.com/gpu", "bad name!"}), pick(p, fuzzQuantity))
	},
	func(j *job, p *program) { j.Request(corev1.ResourceCPU, pick(p, fuzzQuantity)) },
	func(j *job, p *program) { j.Limit(corev1.ResourceMemory, pick(p, fuzzQuantity)) },
	func(j *job, p *program) { j.On(pick(p, fuzzProfiles)) },
	func(j *job, p *program) { j.Accelerators(pick(p, fuzzInts)) },
	func(j *job, p *program) { j.Slice(pick(p, fuzzSlices)) },
	func(j *job, p *program) { j.Fabric(pick(p, fuzzFabrics)) },
	func(j *job, p *program) { j.SharedMemory(pick(p, fuzzQuantity)) },
	func(j *job, p *program) { j.PVC(pick(p, fuzzNames), pick(p, fuzzPaths)) },
	func(j *job, p *program) { j.PVCSubPath(pick(p, fuzzNames), pick(p, fuzzStrings), pick(p, fuzzPaths)) },
	func(j *job, p *program) { j.HostPath(pick(p, fuzzPaths), pick(p, fuzzPaths)) },
	func(j *job, p *program) { j.NFS(pick(p, fuzzStrings), pick(p, fuzzPaths), pick(p, fuzzPaths)) },
	func(j *job, p *program) { j.ConfigMapVolume(pick(p, fuzzNames), pick(p, fuzzPaths)) },
	func(j *job, p *program) { j.SecretVolume(pick(p, fuzzNames), pick(p, fuzzPaths)) },
	func(j *job, p *program) { j.EmptyDir(pick(p, fuzzNames), pick(p, fuzzPaths)) },
	func(j *job, p *program) {
		j.AddVolume(corev1.Volume{Name: pick(p, fuzzNames), VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, pick(p, fuzzPaths))
	},
	func(j *job, p *program) { j.NodeSelector(pick(p, fuzzKeys), pick(p, fuzzValues)) },
	func(j *job, p *program) {
		j.AddToleration(corev1.Toleration{Key: pick(p, fuzzKeys), Operator: pick(p, []corev1.TolerationOperator{corev1.TolerationOpExists, "Maybe"}), Effect: corev1.TaintEffectNoSchedule})
	},
	func(j *job, p *program) { j.Affinity(pick(p, []*corev1.Affinity{nil, {}})) },
	func(j *job, p *program) { j.PriorityClass(pick(p, fuzzNames)) },
	func(j *job, p *program) { j.ServiceAccount(pick(p, fuzzNames)) },
	func(j *job, p *program) { j.ImagePullSecret(pick(p, fuzzNames)) },
	func(j *job, p *program) {
		j.Scheduler(pick(p, []string{"volcano", "", "default-scheduler", "Bad Scheduler"}))
	},
	func(j *job, p *program) {
		j.Queue(pick(p, []string{"team-a", "", "Bad Queue", strings.Repeat("q", 70)}))
	},
	func(j *job, p *program) { j.PodLabel(pick(p, fuzzKeys), pick(p, fuzzValues)) },
	func(j *job, p *program) { j.PodAnnotation(pick(p, fuzzKeys), pick(p, fuzzValues)) },
	func(j *job, p *program) {
		j.PodSecurityContext(pick(p, []*corev1.PodSecurityContext{nil, {}, {RunAsNonRoot: new(true)}}))
	},
	func(j *job, p *program) {
		j.SecurityContext(pick(p, []*corev1.SecurityContext{nil, {}, {Privileged: new(true)}}))
	},
	func(j *job, p *program) {
		j.Port(pick(p, []string{"http", "", "Bad Port", "a-very-long-port-name"}), int32(pick(p, fuzzInts)))
	},
	func(j *job, p *program) { j.HostNetwork(p.Byte()%2 == 0) },
}

// runProgram interprets a program: the job, the template options and at
// most 64 setter calls.
func runProgram(data []byte) (*job, podspec.TemplateOptions) {
	p := fuzzcorpus.NewProgram(data)
	j := &job{} // a zero value: its chained methods return nil
	if p.Byte()%4 != 0 {
		j = newJob(pick(p, fuzzNames))
	}
	opts := podspec.TemplateOptions{
		Container:     pick(p, []string{"main", "", "Bad_Name"}),
		DefaultImage:  pick(p, []string{"", "busybox"}),
		NoGPUs:        p.Byte()%2 == 1,
		RestartPolicy: pick(p, fuzzPolicies),
	}
	if p.Byte()%3 == 0 {
		opts.Resources = map[corev1.ResourceName]string{corev1.ResourceCPU: pick(p, fuzzQuantity)}
	}
	for steps := 0; !p.Done() && steps < 64; steps++ {
		pick(p, setters)(j, p)
	}
	return j, opts
}

// FuzzBuilder drives pod.Builder's setters with random arguments:
// Template never panics, answers the same twice, reports every problem
// with a field path and never with a secret, and a template it accepts
// has its main container with an image and no literal under a
// secret-named variable (podspec.SecretLiteral).
func FuzzBuilder(f *testing.F) {
	f.Add([]byte{1, 0, 0, 1, 0, 0}) // accepted: DefaultImage only
	f.Add([]byte{1, 0, 0, 1, 0, 1, 0, 16, 0, 17, 1, 19, 1, 21, 0, 0})
	f.Add([]byte{1, 0, 0, 0, 0, 1, 18, 1, 17, 2, 36, 2})
	f.Add([]byte{0, 0, 0, 0, 0, 1, 6, 1, 2, 0, 3})
	f.Add([]byte{2, 3, 2, 1, 1, 4, 0, 2, 11, 4, 20, 5, 42, 3, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		j, opts := runProgram(data)
		tmpl, errs := j.Template(tmplPath, opts)
		again, errsAgain := j.Template(tmplPath, opts)
		require.Equal(t, errorStrings(errs), errorStrings(errsAgain), "Template answers the same twice")
		for _, e := range append(errs, j.SettingErrors()...) {
			assert.NotEmpty(t, e.Field, "an error without a field path: %v", e)
			assert.NotContains(t, e.Error(), "hf_abcdefghijklmnopqrstuvwxyz", "an error repeats a secret")
		}
		if len(errs) > 0 {
			return
		}
		require.True(t, equality.Semantic.DeepEqual(tmpl, again), "Template answers the same twice")
		require.NotEmpty(t, tmpl.Spec.Containers)
		c := tmpl.Spec.Containers[0]
		want := opts.Container
		if want == "" {
			want = "main" // Template's default container name
		}
		assert.Equal(t, want, c.Name)
		assert.NotEmpty(t, c.Image)
		for _, e := range c.Env {
			assert.False(t, podspec.SecretLiteral(e.Name, e.Value), "a secret literal in env %s", e.Name)
		}
	})
}
