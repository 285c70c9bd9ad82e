package security_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/label"
)

// The reasons k8s.io/pod-security-admission v0.37.2 gives for the checks
// cube's documented additions fail (policy/check_capabilities_baseline.go,
// check_capabilities_restricted.go, check_hostPathVolumes.go,
// check_restrictedVolumes.go).
const (
	reasonCapabilitiesBaseline   = "non-default capabilities"
	reasonCapabilitiesRestricted = "unrestricted capabilities"
	reasonHostPath               = "hostPath volumes"
	reasonVolumeTypes            = "restricted volume types"
	reasonEscalation             = "allowPrivilegeEscalation != false"
	reasonRunAsNonRoot           = "runAsNonRoot != true"
	reasonSeccomp                = "seccompProfile"
	reasonHostNamespaces         = "host namespaces"
)

// imageUserReasons are the restricted checks a pod fails when it runs as
// its image's user with the runtime's defaults: what a caller who knows
// the image runs as non-root settles with PodSecurityContext and
// SecurityContext (cube's doc, "Pod Security").
var imageUserReasons = []string{reasonEscalation, reasonCapabilitiesRestricted, reasonRunAsNonRoot, reasonSeccomp}

var evaluator = func() policy.Evaluator {
	e, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		panic(err)
	}
	return e
}()

// failing returns the reasons the level refuses the template for, sorted.
func failing(level psaapi.Level, t cube.PodTemplate) []string {
	var out []string
	for _, r := range evaluator.EvaluatePod(psaapi.LevelVersion{Level: level, Version: psaapi.LatestVersion()}, &t.Metadata, &t.Spec) {
		if !r.Allowed && !slices.Contains(out, r.ForbiddenReason) {
			out = append(out, r.ForbiddenReason)
		}
	}
	slices.Sort(out)
	return out
}

// additions are the documented departures from the restricted level a
// template carries.
type additions struct {
	ipcLock      bool // an RDMA fabric's IPC_LOCK
	driverMounts bool // host paths of an accelerator's driver
	hostNetwork  bool // MindIE across nodes, whose HCCL rank table names the nodes
	otherCaps    []string
	otherHost    []string
}

// driverVolumes are the hostPath volumes hardware.Apply adds: the Ascend
// driver's (without the Ascend Docker Runtime) and every catalogue
// profile's HostMounts.
func isDriverVolume(name string) bool {
	if strings.HasPrefix(name, "ascend-") {
		return true
	}
	for _, p := range hardware.Catalogue() {
		for _, m := range p.HostMounts() {
			if m.Volume == name {
				return true
			}
		}
	}
	return false
}

func additionsOf(spec *corev1.PodSpec) additions {
	var a additions
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
			continue
		}
		for _, cp := range c.SecurityContext.Capabilities.Add {
			if cp == "IPC_LOCK" {
				a.ipcLock = true
			} else {
				a.otherCaps = append(a.otherCaps, c.Name+":"+string(cp))
			}
		}
	}
	a.hostNetwork = spec.HostNetwork
	for _, v := range spec.Volumes {
		if v.HostPath == nil {
			continue
		}
		if isDriverVolume(v.Name) {
			a.driverMounts = true
		} else {
			a.otherHost = append(a.otherHost, v.Name)
		}
	}
	return a
}

// requests reports whether some container asks for a resource the
// predicate accepts.
func requests(spec *corev1.PodSpec, pred func(corev1.ResourceName) bool) bool {
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		for name := range c.Resources.Limits {
			if pred(name) {
				return true
			}
		}
		for name := range c.Resources.Requests {
			if pred(name) {
				return true
			}
		}
	}
	return false
}

func isRDMAResource(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), "rdma/") || strings.HasSuffix(string(name), "mlnxnics")
}

// onAccelerators reports whether the pod asks for accelerators or is
// placed on the nodes of an accelerated profile: the roles without
// devices of a job on such a profile (parameter servers, launchers, Ray
// heads) run its image there, with the driver's mounts, too.
func onAccelerators(spec *corev1.PodSpec) bool {
	if requests(spec, isAcceleratorResource) {
		return true
	}
	for _, p := range hardware.Catalogue() {
		labels := p.NodeLabels()
		if !p.Accelerated() || len(labels) == 0 {
			continue
		}
		all := true
		for k, v := range labels {
			all = all && spec.NodeSelector[k] == v
		}
		if all {
			return true
		}
	}
	return false
}

func isAscendResource(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), "huawei.com/")
}

func isAcceleratorResource(name corev1.ResourceName) bool {
	switch {
	case name == corev1.ResourceCPU, name == corev1.ResourceMemory, name == corev1.ResourceEphemeralStorage,
		strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix), isRDMAResource(name):
		return false
	}
	return true
}

// documented is what the levels may refuse a template for, given its
// additions: IPC_LOCK fails the capability checks of both levels, driver
// host paths the volume checks of both.
func (a additions) documented() (baseline, restricted []string) {
	if a.ipcLock {
		baseline = append(baseline, reasonCapabilitiesBaseline)
		restricted = append(restricted, reasonCapabilitiesBaseline, reasonCapabilitiesRestricted)
	}
	if a.driverMounts {
		baseline = append(baseline, reasonHostPath)
		restricted = append(restricted, reasonHostPath, reasonVolumeTypes)
	}
	if a.hostNetwork {
		baseline = append(baseline, reasonHostNamespaces)
		restricted = append(restricted, reasonHostNamespaces)
	}
	return baseline, restricted
}

// verdict judges one template: empty when it meets the rules, else what
// is wrong. imageUser allows the restricted checks of imageUserReasons
// (a template whose caller did not set the restricted security contexts,
// of a builder that does not know its image's user).
func verdict(t cube.PodTemplate, imageUser bool) []string {
	var problems []string
	a := additionsOf(&t.Spec)
	if len(a.otherCaps) > 0 {
		problems = append(problems, fmt.Sprintf("adds capabilities cube does not document: %v", a.otherCaps))
	}
	if len(a.otherHost) > 0 {
		problems = append(problems, fmt.Sprintf("mounts host paths cube does not document: %v", a.otherHost))
	}
	if a.ipcLock && !requests(&t.Spec, isRDMAResource) {
		problems = append(problems, "adds IPC_LOCK without an RDMA device")
	}
	if a.driverMounts && !onAccelerators(&t.Spec) {
		problems = append(problems, "mounts a driver's host paths off accelerator nodes")
	}
	if a.hostNetwork && !(requests(&t.Spec, isAscendResource) && slices.ContainsFunc(t.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "rank-table" })) {
		problems = append(problems, "runs on the host network without an HCCL rank table of Ascend nodes")
	}
	allowedBaseline, allowedRestricted := a.documented()
	if imageUser {
		allowedRestricted = append(allowedRestricted, imageUserReasons...)
	}
	for _, r := range failing(psaapi.LevelBaseline, t) {
		if !slices.Contains(allowedBaseline, r) {
			problems = append(problems, "baseline refuses: "+r)
		}
	}
	for _, r := range failing(psaapi.LevelRestricted, t) {
		if !slices.Contains(allowedRestricted, r) {
			problems = append(problems, "restricted refuses: "+r)
		}
	}
	return problems
}

// knowsImageUser are the builders that run images whose user they know
// and set the restricted level's security contexts themselves: the
// notebook images of Jupyter's docker-stacks (jovyan, 1000), code-server
// (coder, 1000), Label Studio (1001). Their pods pass restricted with no
// help from the caller.
var knowsImageUser = []string{"notebook-jupyter", "notebook-vscode", "notebook-rstudio", "label-studio", "label-studio-postgres"}

// rootImages are the images of templates a builder renders beside the
// caller's pod settings, which the caller's security contexts do not
// reach, and that start as root: Label Studio's bundled Postgres (the
// official image's entrypoint chowns PGDATA as root, then drops to the
// postgres user with gosu). They pass baseline, not restricted; a
// restricted namespace takes ExternalDatabase instead (cube's doc, "Pod
// Security").
var rootImages = []string{label.DefaultPostgresImage}

func runsRootImage(t cube.PodTemplate) bool {
	return slices.ContainsFunc(t.Spec.Containers, func(c corev1.Container) bool { return slices.Contains(rootImages, c.Image) })
}

// fabrics are the fabrics every profile is rendered with.
func fabrics() []struct {
	name   string
	fabric hardware.Fabric
} {
	return []struct {
		name   string
		fabric hardware.Fabric
	}{
		{"none", hardware.Fabric{}},
		{"tcp", hardware.TCP()},
		{"infiniband", hardware.InfiniBand()},
		{"roce", hardware.RoCE()},
	}
}

// profiles are the catalogue and the variants that change what a pod
// mounts: Ascend without its Docker runtime, and HAMi and MIG flavours.
func profiles() []hardware.Profile {
	return append(hardware.Catalogue(),
		hardware.Ascend910B3.AscendDockerRuntime(false),
		hardware.Ascend310P3.AscendDockerRuntime(false),
		hardware.H100.Plugin(hardware.HAMi),
		hardware.A100_80G.Plugin(hardware.MIGSingle),
	)
}

// TestEveryBuilderPodMeetsPodSecurity renders every builder on every
// profile with every fabric, as it comes and with the restricted security
// contexts a caller sets, and judges every pod template with the
// evaluator of k8s.io/pod-security-admission at the latest version.
func TestEveryBuilderPodMeetsPodSecurity(t *testing.T) {
	var cells, rendered, templates int
	refused := map[string]int{}
	for _, bc := range builderCases() {
		renderedHere := 0
		for _, p := range profiles() {
			for _, f := range fabrics() {
				for _, restricted := range []bool{false, true} {
					cells++
					s := setting{profile: p, fabric: f.fabric, restricted: restricted}
					objs, err := bc.make(s).Objects()
					if err != nil {
						// A builder may refuse a combination (MindIE needs
						// Ascend, a fabric needs devices): counted below.
						refused[bc.name]++
						if refused[bc.name] == 1 || os.Getenv("SECURITY_DEBUG") != "" {
							t.Logf("%s refuses %s, fabric %s: %v", bc.name, p.Name, f.name, err)
						}
						continue
					}
					rendered++
					renderedHere++
					imageUser := !restricted && !slices.Contains(knowsImageUser, bc.name)
					found := 0
					for _, obj := range objs {
						tmpls, err := cube.PodTemplates(obj)
						require.NoError(t, err)
						for _, tm := range tmpls {
							found++
							for _, problem := range verdict(tm, imageUser || runsRootImage(tm)) {
								t.Errorf("%s on %s, fabric %s, restricted contexts %v: %s %s (%s): %s",
									bc.name, p.Name, f.name, restricted, obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), tm.Path, problem)
							}
						}
					}
					templates += found
					assert.NotZero(t, found, "%s renders no pod template", bc.name)
				}
			}
		}
		assert.NotZero(t, renderedHere, "%s renders on no profile", bc.name)
	}
	t.Logf("%d builders × %d profiles × %d fabrics × 2 (as they come, restricted): %d cells, %d rendered, %d pod templates judged; refused by the builders: %v",
		len(builderCases()), len(profiles()), len(fabrics()), cells, rendered, templates, refused)
}

// TestGoldenPodsMeetPodSecurity judges every pod template of every golden
// file of the module: baseline with only the documented additions, and
// restricted but for the image-user checks.
func TestGoldenPodsMeetPodSecurity(t *testing.T) {
	objs, files := goldenObjects(t)
	templates := 0
	for _, g := range objs {
		tmpls, err := cube.PodTemplates(g.obj)
		require.NoError(t, err)
		for _, tm := range tmpls {
			templates++
			withTrainerResources(t, g.obj, &tm)
			for _, problem := range verdict(tm, true) {
				t.Errorf("%s: %s %s (%s): %s", g.file, g.obj.GetKind(), g.obj.GetName(), tm.Path, problem)
			}
		}
	}
	assert.Greater(t, templates, 300, "the golden files hold the pods of every builder")
	t.Logf("%d pod templates of %d objects in %d golden files", templates, len(objs), files)
}

// withTrainerResources gives the containers of a TrainJob's runtime patch
// the resources the TrainJob asks for per node (spec.trainer.
// resourcesPerNode), which the Trainer sets on the node's trainer
// container (v2.3.0 pkg/runtime/framework/plugins/jobset/builder.go), so
// that a template is judged as the pod will run: an RDMA device there
// goes with the IPC_LOCK the patch adds.
func withTrainerResources(t *testing.T, obj *unstructured.Unstructured, tm *cube.PodTemplate) {
	t.Helper()
	if obj.GetKind() != "TrainJob" {
		return
	}
	raw, found, err := unstructured.NestedMap(obj.Object, "spec", "trainer", "resourcesPerNode")
	require.NoError(t, err)
	if !found {
		return
	}
	var perNode corev1.ResourceRequirements
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &perNode))
	for i := range tm.Spec.Containers {
		c := &tm.Spec.Containers[i]
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		maps.Copy(c.Resources.Requests, perNode.Requests)
		maps.Copy(c.Resources.Limits, perNode.Limits)
	}
}

// planted is a credential the tests hand to cube; it must never come back
// in an error, a rendering or a description.
const planted = "hf_PlantedCredential0123456789abcdefXYZ"

// assertNoCredential fails when s holds the credential, in clear or in
// base64 (as a Secret's data would carry it).
func assertNoCredential(t *testing.T, s, credential, what string) {
	t.Helper()
	assert.NotContains(t, s, credential, "%s repeats the credential", what)
	assert.NotContains(t, s, base64.StdEncoding.EncodeToString([]byte(credential)), "%s repeats the credential in base64", what)
}

// TestBuildersRefuseALiteralCredentialWithoutRepeatingIt writes a token in
// clear in the env of every builder: Objects and Render refuse it, name
// the variable, and never repeat the value.
func TestBuildersRefuseALiteralCredentialWithoutRepeatingIt(t *testing.T) {
	for _, bc := range builderCases() {
		s := setting{profile: hardware.CPU, literal: planted}
		if bc.name == "serve-mindie" {
			s.profile = hardware.Ascend910B3
		}
		_, err := bc.make(s).Objects()
		require.Error(t, err, "%s takes a credential in clear", bc.name)
		assert.Contains(t, err.Error(), "HF_TOKEN", bc.name)
		assert.Contains(t, err.Error(), "EnvFromSecret", "%s says how to do it instead", bc.name)
		assertNoCredential(t, err.Error(), planted, bc.name+"'s error")

		var out bytes.Buffer
		err = cube.Render(&out, bc.make(s))
		require.Error(t, err, bc.name)
		assertNoCredential(t, err.Error()+out.String(), planted, bc.name+"'s rendering")
	}
}

// TestClientsNeverPrintTheirCredentials formats the clients that hold an
// API key, a token or a password every way a program might log them.
func TestClientsNeverPrintTheirCredentials(t *testing.T) {
	sc, err := inference.NewClient("http://qwen-chat:8000/v1", inference.APIKey(planted), inference.ServedModel("qwen"))
	require.NoError(t, err)
	lc, err := label.NewClient("http://labels:8080", label.Token(planted))
	require.NoError(t, err)
	backend, err := label.NewBackend(sc, label.BasicAuth("labeler", planted))
	require.NoError(t, err)
	for name, v := range map[string]any{"inference.Client": sc, "label.Client": lc, "label.Backend": backend} {
		for _, verb := range []string{"%v", "%+v", "%s", "%#v"} {
			assertNoCredential(t, fmt.Sprintf(verb, v), planted, name+" printed with "+verb)
		}
		assert.False(t, strings.Contains(fmt.Sprint(v), "0x"), "%s prints as %q: say what it is, not where", name, fmt.Sprint(v))
	}
}
