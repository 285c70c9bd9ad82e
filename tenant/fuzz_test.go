package tenant_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/internal/testsupport/testpod"
	"github.com/cubestudio/cube/tenant"
)

// tenantProgram drives a TenantSpec through the method calls a byte
// string encodes: each byte picks a method, the bytes after it pick its
// arguments from values a user might pass (valid, invalid, empty) and
// from the two free strings.
type tenantProgram struct {
	code []byte
	a, b string
}

func (p *tenantProgram) next() byte {
	if len(p.code) == 0 {
		return 0
	}
	c := p.code[0]
	p.code = p.code[1:]
	return c
}

func (p *tenantProgram) pick(vocab ...string) string { return vocab[int(p.next())%len(vocab)] }

func (p *tenantProgram) quantity() string {
	return p.pick("1", "64", "500m", "1Gi", "2Ti", "128Mi", "0", "-1", "lots", "", "1e3", p.a)
}

func (p *tenantProgram) name() string {
	return p.pick("alice", "team-b", "monitoring", "", "Bad_Name", "a.b", p.a, p.b)
}

func (p *tenantProgram) number() int { return int(int8(p.next())) }

func (p *tenantProgram) labels() map[string]string {
	switch p.next() % 4 {
	case 0:
		return nil
	case 1:
		return map[string]string{p.pick("app", "kubernetes.io/metadata.name", "bad key", p.a): p.pick("x", "ray", "", "bad value!", p.b)}
	case 2:
		return map[string]string{}
	}
	return map[string]string{"app.kubernetes.io/name": "prometheus", p.a: p.b}
}

func (p *tenantProgram) exception() tenant.IngressException {
	switch p.next() % 5 {
	case 0:
		return tenant.KubeRayIngress()
	case 1:
		return tenant.PrometheusIngress()
	case 2:
		return tenant.IngressControllerIngress(p.name())
	}
	e := tenant.IngressException{Name: p.name(), FromNamespaces: p.labels(), FromPods: p.labels(), ToPods: p.labels()}
	for range p.next() % 3 {
		e.Ports = append(e.Ports, int32(p.number())*300)
	}
	return e
}

// run applies the program to t and returns it.
func (p *tenantProgram) run(t *tenant.Spec) *tenant.Spec {
	for len(p.code) > 0 {
		switch p.next() % 20 {
		case 0:
			t.Label(p.pick("cost-center", "bad key!", "example.com/team", p.a), p.pick("ml-42", "", "bad value!", p.b))
		case 1:
			t.Editors(p.name())
		case 2:
			t.EditorGroups(p.name())
		case 3:
			t.Viewers(p.name())
		case 4:
			t.ViewerGroups(p.name())
		case 5:
			t.CPU(p.quantity())
		case 6:
			t.Memory(p.quantity())
		case 7:
			t.Pods(p.number())
		case 8:
			t.Storage(p.quantity())
		case 9:
			t.Accelerators(hardware.Profile{Name: "fuzz", ResourceName: corev1.ResourceName(p.pick("nvidia.com/gpu", "huawei.com/Ascend910", "bad/key/x", "", p.a))}, p.number())
		case 10:
			t.Quota(corev1.ResourceName(p.pick("persistentvolumeclaims", "limits.memory", "limits.cpu", "services.loadbalancers", "bad key", p.a)), p.quantity())
		case 11:
			t.DefaultCPU(p.quantity(), p.pick("", "2", "500m", "64", "x"))
		case 12:
			t.DefaultMemory(p.quantity(), p.pick("", "4Gi", "1Ti", "x"))
		case 13:
			t.QueueWeight(p.number())
		case 14:
			t.QueueReclaimable(p.next()%2 == 0)
		case 15:
			t.PodSecurity(tenant.PodSecurityLevel(p.pick("baseline", "restricted", "privileged", "", "lenient", p.a)))
		case 16:
			t.AllowRDMA()
		case 17:
			t.AllowIngressFromNamespace(p.name())
		case 18:
			t.AllowIngress(p.exception())
		case 19:
			var es []tenant.IngressException
			for range p.next() % 3 {
				es = append(es, p.exception())
			}
			t.IngressExceptions(es...)
		}
	}
	return t
}

// tenantSeeds are the fuzz seeds; TestTenantFuzzSeedsApply applies those
// the builder accepts to the API server.
var tenantSeeds = []struct {
	name string
	code []byte
	a, b string
}{
	{"team-a", nil, "", ""},
	{"team-a", []byte{5, 1, 6, 3, 9, 0, 20, 1, 0, 3, 2}, "x", "y"},
	{"team-a", []byte{16, 18, 2, 0, 17, 2, 11, 6, 2, 12, 5, 1, 13, 3, 14, 1}, "ops", "ops"},
	{"team-a", []byte{10, 1, 4, 12, 5, 1, 11, 2, 1}, "", ""},
	{"team-a", []byte{18, 3, 2, 1, 1, 1, 0, 3, 1, 27, 15, 1}, "app", "web"},
	{"team-a", []byte{19, 2, 0, 1, 1, 0, 1, 2, 4, 7, 200, 15, 4}, "", ""},
	// Inputs the fuzzer found (go test -fuzz FuzzTenant) that the builder
	// accepts, kept so that the API server judges them in every run.
	{"tea988", []byte("\x13\x02A\x01\x01\x00\x01$\x04\x00 (0"), "", ""},
	{"b", []byte("b000101010"), "0", "0"},
	{"x", []byte("x00180002"), "", "0"},
	{"c", []byte("180c10001"), "0", "0"},
	{"t798y2", []byte("77.X\t78y"), "0", "0"},
	{"a", []byte("A\"c29080"), "0", "0"},
	{"a", []byte("\xabZ0\\Z0|z"), "7", "!"},
	{"c", []byte("C0C0C0C"), "0", "0"},
	// Refused inputs: fuzz seeds only.
	{"Team_A", []byte{5, 8, 6, 7, 13, 0, 15, 4, 17, 4, 10, 4, 3}, "bad key", "!"},
	{"", []byte{1, 3, 4, 3, 18, 3, 4, 3, 3, 3, 2, 255, 255}, "", ""},
}

// FuzzTenant: no sequence of method calls with any arguments panics, and a
// tenant Objects accepts renders and passes Admits. That the API server
// accepts what Objects accepts is TestTenantFuzzSeedsApply's part.
func FuzzTenant(f *testing.F) {
	for _, s := range tenantSeeds {
		f.Add(s.name, s.code, s.a, s.b)
	}
	f.Fuzz(func(t *testing.T, name string, code []byte, a, b string) {
		prog := &tenantProgram{code: code, a: a, b: b}
		team := prog.run(tenant.New(name))
		objs, err := team.Objects()
		if err != nil {
			require.Nil(t, objs)
			require.NotEmpty(t, err.Error())
			var buf bytes.Buffer
			require.Error(t, cube.Render(&buf, team), "Render refuses what Objects refuses")
			return
		}
		require.NotEmpty(t, objs)
		for _, o := range objs {
			require.Equal(t, name, o.GetLabels()[cube.LabelRelease])
		}
		var buf bytes.Buffer
		require.NoError(t, cube.Render(&buf, team))
		if err := tenant.Admits(team, testpod.Pod("plain", nil)); err != nil {
			var ps *cube.PodSecurityError
			require.ErrorAs(t, err, &ps, "only the Pod Security level refuses a plain pod")
			require.Equal(t, "restricted:latest", ps.Level)
		}
	})
}

// TestTenantFuzzSeedsApply applies every fuzz seed Objects accepts to the
// real API server, renamed after a fresh namespace: what the builder
// accepts, the server's schemas and validation accept too.
func TestTenantFuzzSeedsApply(t *testing.T) {
	env := testenv.Get(t)
	accepted := 0
	for i, s := range tenantSeeds {
		if _, err := (&tenantProgram{code: s.code, a: s.a, b: s.b}).run(tenant.New(s.name)).Objects(); err != nil {
			continue
		}
		accepted++
		ns := env.Namespace(t)
		team := (&tenantProgram{code: s.code, a: s.a, b: s.b}).run(tenant.New(ns))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := env.Client.Delete(ctx, &vcscheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete queue %s: %v", ns, err)
			}
		})
		c := cube.NewFromClient(env.Client, cube.Namespace(ns))
		rel, err := c.Apply(t.Context(), team)
		require.NoError(t, err, "seed %d", i)
		objs, err := team.Objects()
		require.NoError(t, err)
		assert.Len(t, rel.Objects, len(objs), "seed %d: every object stored", i)
	}
	assert.GreaterOrEqual(t, accepted, 13, "the valid seeds")
}

// podPrioritySeeds are lists of classes a byte string encodes: each class
// takes a name from the vocabulary below or the free string, a value and
// its two flags.
var podPrioritySeeds = []struct {
	release string
	code    []byte
	free    string
}{
	{"pod-priorities", []byte{0, 10, 3, 1, 200, 0}, "x"},
	{"pod-priorities", []byte{2, 255, 1}, "system-node-critical"},
	{"Bad", []byte{0, 1, 0, 0, 1, 0}, ""},
	{"pp", []byte{5, 127, 2, 5, 128, 2}, "dup"},
	{"pp", []byte{6, 0, 0}, "a-very-long-name.with.dots"},
	{"pp", nil, ""},
}

func podPrioritiesOf(code []byte, free string) []tenant.PodPriority {
	names := []string{"batch", "urgent", "system-mine", "", "Not_A_Name", free, "x.y-z"}
	var ps []tenant.PodPriority
	for len(code) >= 3 {
		c, v, flags := code[0], code[1], code[2]
		code = code[3:]
		value := int32(int8(v)) * 16_000_000 // spans the highest user value, 1e9
		ps = append(ps, tenant.PodPriority{Name: names[int(c)%len(names)], Value: value, Default: flags&1 != 0, NoPreemption: flags&2 != 0})
	}
	return ps
}

// FuzzPodPriorities: no list of classes panics; a list Objects refuses,
// Render refuses too; an accepted one renders a PriorityClass per class,
// labelled with the release. That the API server accepts what Objects
// accepts is TestPodPrioritiesFuzzSeedsApply's part.
func FuzzPodPriorities(f *testing.F) {
	for _, s := range podPrioritySeeds {
		f.Add(s.release, s.code, s.free)
	}
	f.Fuzz(func(t *testing.T, release string, code []byte, free string) {
		ps := podPrioritiesOf(code, free)
		w := tenant.PodPriorities(release, ps...)
		objs, err := w.Objects()
		var buf bytes.Buffer
		if err != nil {
			require.Nil(t, objs)
			require.Error(t, cube.Render(&buf, w), "Render refuses what Objects refuses")
			return
		}
		require.Len(t, objs, len(ps))
		for i, o := range objs {
			pc, ok := o.(*schedulingv1.PriorityClass)
			require.True(t, ok, "%T", o)
			require.Equal(t, ps[i].Name, pc.Name)
			require.Equal(t, release, pc.Labels[cube.LabelRelease])
		}
		require.NoError(t, cube.Render(&buf, w))
	})
}

// TestPodPrioritiesFuzzSeedsApply creates every seed's classes that
// Objects accepts on the real API server, as a dry run: what the builder
// accepts, the server's validation accepts too.
func TestPodPrioritiesFuzzSeedsApply(t *testing.T) {
	env := testenv.Get(t)
	accepted := 0
	for i, s := range podPrioritySeeds {
		objs, err := tenant.PodPriorities(s.release, podPrioritiesOf(s.code, s.free)...).Objects()
		if err != nil {
			continue
		}
		accepted++
		for _, o := range objs {
			require.NoError(t, env.Client.Create(t.Context(), o, client.DryRunAll), "seed %d: %s", i, o.GetName())
		}
	}
	assert.GreaterOrEqual(t, accepted, 2, "the valid seeds")
}
