package podspec_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/identity"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/vgpu"
)

// job is the smallest builder that embeds the shared pod settings.
type job struct{ pod.Builder[job] }

func newJob(name string) *job {
	j := &job{}
	podspec.Of(&j.Handle).Init(j, "job", name)
	return j
}

// The plumbing a workload package reaches through podspec.Of, on the test's
// builder so the tests read as chains.
func (j *job) Template(p *field.Path, opts podspec.TemplateOptions) (corev1.PodTemplateSpec, field.ErrorList) {
	return podspec.Of(&j.Handle).Template(p, opts)
}
func (j *job) SettingErrors() field.ErrorList     { return podspec.Of(&j.Handle).SettingErrors() }
func (j *job) ValidateMeta(n int) field.ErrorList { return podspec.Of(&j.Handle).ValidateMeta(n) }
func (j *job) GPUCount() int                      { return podspec.Of(&j.Handle).GPUCount() }
func (j *job) Profile() (hardware.Profile, bool)  { return podspec.Of(&j.Handle).Profile() }

var tmplPath = field.NewPath("spec", "template")

func qty(l corev1.ResourceList, name corev1.ResourceName) string {
	q, ok := l[name]
	if !ok {
		return "<unset>"
	}
	return q.String()
}

func errorStrings(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

func TestTemplateCarriesEverySetting(t *testing.T) {
	cmd := []string{"python", "train.py"}
	j := newJob("sft").
		Namespace("team-a").Label("team", "nlp").PartOf("llm").
		Image("pytorch:2.4").Command(cmd...).Args("--epochs", "3").AddArgs("--bf16").
		Env("A", "1").Env("A", "2").EnvFromSecret("HF_TOKEN", pod.SecretKeyRef{Name: "hf", Key: "token"}).
		CPU("8").Memory("64Gi").
		PVC("datasets", "/data").SecretVolume("ssh", "/etc/ssh-keys").
		NodeSelector("zone", "a").PriorityClass("high").ServiceAccount("trainer").
		ImagePullSecret("registry").Queue("team-a").Scheduler("volcano").
		PodLabel("role", "x").Port("http", 8080)
	cmd[0] = "mutated"

	tmpl, errs := j.Template(tmplPath, podspec.TemplateOptions{Container: "pytorch", Labels: map[string]string{"component": "worker"}, RestartPolicy: corev1.RestartPolicyOnFailure})
	require.Empty(t, errs)
	c := tmpl.Spec.Containers[0]
	assert.Equal(t, "pytorch", c.Name)
	assert.Equal(t, "pytorch:2.4", c.Image)
	assert.Equal(t, []string{"python", "train.py"}, c.Command, "caller's slice was copied")
	assert.Equal(t, []string{"--epochs", "3", "--bf16"}, c.Args)
	assert.Equal(t, []corev1.EnvVar{
		{Name: "A", Value: "2"},
		{Name: "HF_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "hf"}, Key: "token"}}},
	}, c.Env)
	assert.Equal(t, resource.MustParse("8"), c.Resources.Requests[corev1.ResourceCPU])
	assert.Equal(t, resource.MustParse("64Gi"), c.Resources.Limits[corev1.ResourceMemory])
	assert.Equal(t, []corev1.VolumeMount{
		{Name: "pvc-datasets", MountPath: "/data"},
		{Name: "secret-ssh", MountPath: "/etc/ssh-keys", ReadOnly: true},
	}, c.VolumeMounts)
	assert.Equal(t, "datasets", tmpl.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
	assert.Equal(t, map[string]string{"zone": "a"}, tmpl.Spec.NodeSelector)
	assert.Equal(t, "high", tmpl.Spec.PriorityClassName)
	assert.Equal(t, "trainer", tmpl.Spec.ServiceAccountName)
	assert.Equal(t, "volcano", tmpl.Spec.SchedulerName)
	assert.Equal(t, corev1.RestartPolicyOnFailure, tmpl.Spec.RestartPolicy)
	assert.Equal(t, []corev1.LocalObjectReference{{Name: "registry"}}, tmpl.Spec.ImagePullSecrets)
	assert.Equal(t, "team-a", tmpl.Annotations[podspec.VolcanoQueueAnnotation])
	assert.Equal(t, map[string]string{
		"team": "nlp", "role": "x", "component": "worker",
		identity.LabelName: "sft", identity.LabelManagedBy: "cube", identity.LabelPartOf: "llm", identity.LabelKind: "job", identity.LabelRelease: "sft",
	}, tmpl.Labels)

	meta := podspec.Of(&j.Handle).ObjectMeta("sft-config")
	assert.Equal(t, "team-a", meta.Namespace)
	assert.Equal(t, "nlp", meta.Labels["team"])
	assert.Equal(t, "sft", meta.Labels[identity.LabelRelease])

	again, _ := j.Template(tmplPath, podspec.TemplateOptions{Container: "pytorch"})
	again.Spec.Containers[0].Args[0] = "changed"
	third, _ := j.Template(tmplPath, podspec.TemplateOptions{Container: "pytorch"})
	assert.Equal(t, "--epochs", third.Spec.Containers[0].Args[0], "every call is fresh")
}

func TestTemplateHardware(t *testing.T) {
	j := newJob("ddp").Image("pytorch:2.4").On(hardware.H100).Accelerators(8).Fabric(hardware.InfiniBand())
	tmpl, errs := j.Template(tmplPath, podspec.TemplateOptions{Container: "pytorch"})
	require.Empty(t, errs)
	c := tmpl.Spec.Containers[0]
	assert.Equal(t, "8", qty(c.Resources.Limits, "nvidia.com/gpu"))
	assert.Equal(t, c.Resources.Limits["nvidia.com/gpu"], c.Resources.Requests["nvidia.com/gpu"])
	assert.Contains(t, c.SecurityContext.Capabilities.Add, corev1.Capability("IPC_LOCK"))
	envNames := map[string]bool{}
	for _, e := range c.Env {
		envNames[e.Name] = true
	}
	assert.True(t, envNames["NCCL_DEBUG"], "NCCL variables set: %v", envNames)
	assert.Equal(t, "1", qty(c.Resources.Limits, "rdma/rdma_shared_device_a"))
	assert.Equal(t, 8, j.GPUCount())

	// A parameter-server-like role keeps the profile's placement but no devices.
	ps, errs := j.Template(tmplPath, podspec.TemplateOptions{Container: "pytorch", NoGPUs: true})
	require.Empty(t, errs)
	_, hasGPU := ps.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]
	assert.False(t, hasGPU)

	// The same builder on Ascend renders Huawei's resource and HCCL.
	j.On(hardware.Ascend910B3).Fabric(hardware.RoCE())
	npu, errs := j.Template(tmplPath, podspec.TemplateOptions{Container: "pytorch"})
	require.Empty(t, errs)
	nc := npu.Spec.Containers[0]
	assert.Equal(t, "8", qty(nc.Resources.Limits, "huawei.com/Ascend910"))
	hccl := false
	for _, e := range nc.Env {
		if e.Name == "HCCL_IF_IP" {
			hccl = true
		}
		assert.NotContains(t, e.Name, "NCCL_", "no NCCL on Ascend")
	}
	assert.True(t, hccl)
}

func TestTemplateSlice(t *testing.T) {
	j := newJob("nb").Image("jupyter").Slice(vgpu.Slice(hardware.A100_80G).Memory("10Gi").Cores(30))
	tmpl, errs := j.Template(tmplPath, podspec.TemplateOptions{})
	require.Empty(t, errs)
	lim := tmpl.Spec.Containers[0].Resources.Limits
	assert.Equal(t, "1", qty(lim, "nvidia.com/gpu"))
	assert.Equal(t, "10240", qty(lim, "nvidia.com/gpumem"))
	assert.Equal(t, "30", qty(lim, "nvidia.com/gpucores"))
	assert.Equal(t, 0, j.GPUCount())
	p, ok := j.Profile()
	require.True(t, ok)
	assert.Equal(t, hardware.A100_80G.Name, p.Name)
}

func TestTemplateReportsEveryProblem(t *testing.T) {
	j := newJob("bad").
		CPU("eight").Memory("-1Gi").Env("A=B", "x").EnvFromSecret("TOKEN", pod.SecretKeyRef{Name: "", Key: ""}).
		PVC("Bad_Claim", "data").HostPath("relative", "/host").EmptyDir("a", "/scratch").EmptyDir("b", "/scratch/").
		Accelerators(-1).SharedMemory("lots").PodLabel("bad key!", "v")
	_, errs := j.Template(tmplPath, podspec.TemplateOptions{Container: "main"})
	assert.ElementsMatch(t, []string{
		`spec.template.gpus: Invalid value: -1: must not be negative`,
		`spec.template.env[TOKEN].valueFrom.secretKeyRef: Required value: secret name and key are required`,
		`spec.template.spec.containers[0].image: Required value: an image is required`,
		`spec.template.spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')`,
		`spec.template.spec.containers[0].resources.requests[cpu]: Invalid value: "eight": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
		`spec.template.spec.containers[0].resources.requests[memory]: Invalid value: "-1Gi": must not be negative`,
		`spec.template.spec.containers[0].resources.limits[cpu]: Invalid value: "eight": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
		`spec.template.spec.containers[0].resources.limits[memory]: Invalid value: "-1Gi": must not be negative`,
		`spec.template.spec.volumes[0].persistentVolumeClaim.claimName: Invalid value: "Bad_Claim": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		`spec.template.spec.containers[0].volumeMounts[0].mountPath: Invalid value: "data": must be an absolute path`,
		`spec.template.spec.volumes[1].hostPath.path: Invalid value: "relative": must be an absolute path`,
		`spec.template.spec.containers[0].volumeMounts[3].mountPath: Duplicate value: "/scratch/"`,
		`spec.template.sharedMemory: Invalid value: "lots": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
		`spec.template.metadata.labels[bad key!]: Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
	}, errorStrings(errs))
}

func TestAcceleratorsNeedAProfile(t *testing.T) {
	_, errs := newJob("x").Image("i").Accelerators(2).Template(tmplPath, podspec.TemplateOptions{})
	require.Len(t, errs, 1)
	assert.Equal(t, `spec.template.on: Required value: 2 accelerators asked for without a hardware profile: call On(hardware.H100) or similar`, errs[0].Error())
}

func TestValidateMeta(t *testing.T) {
	assert.Empty(t, newJob("ok-name").ValidateMeta(63))
	errs := newJob("Bad_Name").Namespace("Team A").Label("k", "bad value!").ValidateMeta(63)
	require.Len(t, errs, 3)
	assert.Equal(t, "metadata.name", errs[0].Field)
	assert.Equal(t, "metadata.namespace", errs[1].Field)
	assert.Equal(t, "metadata.labels[k]", errs[2].Field)
	long := newJob("a-name-that-is-longer-than-twenty").ValidateMeta(20)
	require.Len(t, long, 1)
	assert.Equal(t, field.ErrorTypeTooLong, long[0].Type)
	assert.Equal(t, field.ErrorTypeRequired, newJob("").ValidateMeta(63)[0].Type)
}

// TestOneLengthLimitForOneName: a name over both the DNS label's 63
// characters and the builder's own limit was reported twice, with two
// different limits; it is reported once, with the tighter one.
func TestOneLengthLimitForOneName(t *testing.T) {
	name := strings.Repeat("a", 70)
	for _, limit := range []int{54, 63, 0, 100} {
		errs := newJob(name).ValidateMeta(limit)
		want := limit
		if limit == 0 || limit > 63 {
			want = 63
		}
		assert.Equal(t, []string{fmt.Sprintf("metadata.name: Too long: may not be more than %d bytes", want)}, errStrings(errs), "limit %d", limit)
	}
	// The format is still judged on a long name.
	errs := newJob(strings.Repeat("A", 70)).ValidateMeta(54)
	require.Len(t, errs, 2)
	assert.Equal(t, field.ErrorTypeInvalid, errs[0].Type)
	assert.Equal(t, field.ErrorTypeTooLong, errs[1].Type)
}

func errStrings(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

func TestTemplateResourcesOverrideThePodSettings(t *testing.T) {
	j := newJob("mpi").Image("i").CPU("32").Memory("256Gi").Request(corev1.ResourceEphemeralStorage, "10Gi").
		On(hardware.H100).Accelerators(8)
	launcher, errs := j.Template(tmplPath, podspec.TemplateOptions{
		NoGPUs:    true,
		Resources: map[corev1.ResourceName]string{corev1.ResourceCPU: "1", corev1.ResourceMemory: "2Gi"},
	})
	require.Empty(t, errs)
	res := launcher.Spec.Containers[0].Resources
	assert.Equal(t, []string{"1", "2Gi", "10Gi"}, []string{qty(res.Requests, "cpu"), qty(res.Requests, "memory"), qty(res.Requests, "ephemeral-storage")})
	assert.Equal(t, []string{"1", "2Gi", "<unset>"}, []string{qty(res.Limits, "cpu"), qty(res.Limits, "memory"), qty(res.Limits, "nvidia.com/gpu")})

	// The override is per template: the next one keeps the shared values.
	worker, errs := j.Template(tmplPath, podspec.TemplateOptions{})
	require.Empty(t, errs)
	res = worker.Spec.Containers[0].Resources
	assert.Equal(t, []string{"32", "256Gi", "8"}, []string{qty(res.Limits, "cpu"), qty(res.Limits, "memory"), qty(res.Limits, "nvidia.com/gpu")})

	// Bad override values are reported where they land.
	_, errs = j.Template(tmplPath, podspec.TemplateOptions{Resources: map[corev1.ResourceName]string{corev1.ResourceMemory: "-2Gi"}})
	assert.Equal(t, []string{
		`spec.template.spec.containers[0].resources.requests[memory]: Invalid value: "-2Gi": must not be negative`,
		`spec.template.spec.containers[0].resources.limits[memory]: Invalid value: "-2Gi": must not be negative`,
	}, errorStrings(errs))
}

// TestSettingErrorsOnce: a workload of several templates omits the
// chained problems from each and reports them once, under the setting.
func TestSettingErrorsOnce(t *testing.T) {
	j := newJob("x").Image("i").On(hardware.H100).Accelerators(-1).Queue("Bad Queue")
	for range 2 {
		_, errs := j.Template(tmplPath, podspec.TemplateOptions{OmitSettingErrors: true})
		assert.Empty(t, errs, "a negative count is not passed on to the hardware as well")
	}
	want := []string{
		`gpus: Invalid value: -1: must not be negative`,
		`queue: Invalid value: "Bad Queue": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
	}
	assert.Equal(t, want, errorStrings(j.SettingErrors()))
	j.SettingErrors()[0].Field = "changed"
	assert.Equal(t, want, errorStrings(j.SettingErrors()), "a copy")
	_, errs := j.Template(tmplPath, podspec.TemplateOptions{})
	assert.Equal(t, []string{"spec.template." + want[0], "spec.template." + want[1]}, errorStrings(errs), "placed under the template by default")
}

func TestQueueNames(t *testing.T) {
	assert.Empty(t, newJob("x").Queue("team-a.gpu").SettingErrors())
	assert.Empty(t, newJob("x").Queue("").SettingErrors(), "no queue")
	assert.Equal(t, []string{`queue: Invalid value: "root": Volcano accepts no jobs in the root queue; use a leaf queue`},
		errorStrings(newJob("x").Queue("root").SettingErrors()))
}

// TestEnvRefusesLiteralSecrets: a credential written in clear would be
// stored in every rendered object; the error never repeats it.
func TestEnvRefusesLiteralSecrets(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		secret      bool
	}{
		{"HF_TOKEN", "hf_abcdefghijklmnopqrstuvwxyz", true},
		{"OPENAI_API_KEY", "sk-proj-0123456789", true},
		{"AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", true},
		{"db_password", "hunter22", true},
		{"WANDB_APIKEY", "0123456789abcdef", true},
		{"HF_TOKEN", "short", false},
		{"HF_TOKEN", "$(TOKEN_FROM_SECRET)", false},
		{"HF_TOKEN_PATH", "/var/run/secrets/hf/token", false},
		{"TOKEN", "/var/run/secrets/token", false},
		{"AWS_SECRET_NAME", "team-a-credentials", false},
		{"PASSWORD_HINT", "ask the admin please", false},
		{"MODEL", "meta-llama/Llama-3.1-8B-Instruct", false},
	} {
		assert.Equal(t, tc.secret, podspec.SecretLiteral(tc.name, tc.value), "%s=%s", tc.name, tc.value)
	}
	j := newJob("x").Image("i").Env("HF_TOKEN", "hf_abcdefghijklmnopqrstuvwxyz")
	errs := errorStrings(j.SettingErrors())
	assert.Equal(t, []string{`env[HF_TOKEN].value: Forbidden: HF_TOKEN looks like a credential written in clear, which would be stored in the rendered objects: put it in a Secret and use EnvFromSecret("HF_TOKEN", secret, key)`}, errs)
	assert.NotContains(t, errs[0], "hf_abc")
}

// TestNamesTheAPIServerChecks: names of objects a pod refers to are
// refused while chaining, as the API server would refuse the pod.
func TestNamesTheAPIServerChecks(t *testing.T) {
	j := newJob("x").PriorityClass("Bad_Name").ServiceAccount("a b").Scheduler("UPPER").
		PriorityClass("").ServiceAccount("").Scheduler("")
	assert.Equal(t, []string{
		`priorityClass: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		`serviceAccount: Invalid value: "a b": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		`scheduler: Invalid value: "UPPER": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
	}, errorStrings(j.SettingErrors()), "empty names mean none")
}

func TestTemplateRefusesBadPorts(t *testing.T) {
	_, errs := newJob("x").Image("i").Port("http", 70000).Port("Bad_Name", 80).Port("metrics", 0).
		Template(tmplPath, podspec.TemplateOptions{})
	require.Len(t, errs, 3, "%v", errs)
	assert.Equal(t, "spec.template.spec.containers[0].ports[0].containerPort", errs[0].Field)
	assert.Equal(t, int32(70000), errs[0].BadValue)
	assert.Equal(t, "spec.template.spec.containers[0].ports[1].name", errs[1].Field)
	assert.Equal(t, "spec.template.spec.containers[0].ports[2].containerPort", errs[2].Field)
}

func TestTemplateRefusesAcceleratorsBesideASlice(t *testing.T) {
	_, errs := newJob("x").Image("i").Slice(vgpu.Slice(hardware.A100_80G).Memory("10Gi")).Accelerators(2).
		Template(tmplPath, podspec.TemplateOptions{})
	require.Len(t, errs, 1)
	assert.Equal(t, field.ErrorTypeForbidden, errs[0].Type)
	assert.Equal(t, "spec.template.gpus", errs[0].Field)
	assert.Contains(t, errs[0].Detail, "Accelerators(2) and Slice both set")
}

// A Volcano vGPU slice runs under Volcano's scheduler: its device plugin
// allocates only to pods that scheduler annotated.
func TestTemplateVolcanoSliceUsesVolcanoScheduler(t *testing.T) {
	slice := func() *vgpu.Spec { return vgpu.Slice(hardware.A100_80G).Memory("10Gi").Backend(vgpu.Volcano) }
	tmpl, errs := newJob("x").Image("i").Slice(slice()).Template(tmplPath, podspec.TemplateOptions{})
	require.Empty(t, errs)
	assert.Equal(t, "volcano", tmpl.Spec.SchedulerName)

	_, errs = newJob("x").Image("i").Slice(slice()).Scheduler("hami-scheduler").Template(tmplPath, podspec.TemplateOptions{})
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.template.spec.schedulerName", errs[0].Field)
	assert.Equal(t, "hami-scheduler", errs[0].BadValue)

	tmpl, errs = newJob("x").Image("i").Slice(vgpu.Slice(hardware.A100_80G).Memory("10Gi")).Template(tmplPath, podspec.TemplateOptions{})
	require.Empty(t, errs)
	assert.Empty(t, tmpl.Spec.SchedulerName, "a HAMi slice keeps the default scheduler")
}

// Node selectors and Secret references are checked as the API server
// checks them (the serve fuzz corpus found both passing Template).
func TestTemplateChecksNodeSelectorsAndSecretRefs(t *testing.T) {
	_, errs := newJob("x").Image("i").NodeSelector("", "v").EnvFromSecret("TOKEN", pod.SecretKeyRef{Name: "Bad_Secret", Key: "a/b"}).
		Template(tmplPath, podspec.TemplateOptions{})
	require.Len(t, errs, 4, "%v", errs)
	assert.Equal(t, "spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.name", errs[0].Field)
	assert.Equal(t, "spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.key", errs[1].Field)
	assert.Equal(t, "spec.template.spec.nodeSelector[]", errs[2].Field, "the key is empty")
	assert.Equal(t, "spec.template.spec.nodeSelector[]", errs[3].Field)
}

// Found by notebook's FuzzNotebookBuilder: the API server validates node
// selector keys and values as labels, so an empty key was accepted here and
// refused there.
func TestNodeSelectorValidated(t *testing.T) {
	_, errs := newJob("x").Image("i").NodeSelector("", "gpu").NodeSelector("pool", "bad value!").Template(tmplPath, podspec.TemplateOptions{})
	fields := make([]string, len(errs))
	for i, e := range errs {
		fields[i] = e.Field
	}
	assert.ElementsMatch(t, []string{"spec.template.spec.nodeSelector[]", "spec.template.spec.nodeSelector[]", "spec.template.spec.nodeSelector[pool]"}, fields, "%v", errs)
	_, errs = newJob("x").Image("i").NodeSelector("node.kubernetes.io/instance-type", "p5.48xlarge").Template(tmplPath, podspec.TemplateOptions{})
	assert.Empty(t, errs)
}

func TestParseStorageSize(t *testing.T) {
	p := field.NewPath("storage", "size")
	q, err := podspec.ParseStorageSize(p, "50Gi")
	require.Nil(t, err)
	assert.Equal(t, "50Gi", q.String())
	for value, detail := range map[string]string{
		"500m":  "must be a whole number of bytes", // found by notebook's FuzzNotebookBuilder
		"0":     "must be positive",
		"-1Gi":  "must be positive",
		"lots":  "quantities must match",
		"1e100": "must be at most 8Ei",              // found by label's hostile-input tests
		"8Ei":   "is beyond what a quantity counts", // one byte beyond int64
	} {
		_, err := podspec.ParseStorageSize(p, value)
		require.NotNil(t, err, value)
		assert.Equal(t, "storage.size", err.Field)
		assert.Contains(t, err.Detail, detail, value)
	}
}

// Found by notebook's FuzzNotebookBuilder: memory of "500m" (half a byte)
// reached the API server, which only warns.
func TestFractionalBytesRefused(t *testing.T) {
	_, errs := newJob("x").Image("i").Memory("500m").CPU("500m").Template(tmplPath, podspec.TemplateOptions{})
	assert.Equal(t, []string{
		`spec.template.spec.containers[0].resources.requests[memory]: Invalid value: "500m": must be a whole number of bytes`,
		`spec.template.spec.containers[0].resources.limits[memory]: Invalid value: "500m": must be a whole number of bytes`,
	}, errorStrings(errs), "CPU may be fractional")
}
