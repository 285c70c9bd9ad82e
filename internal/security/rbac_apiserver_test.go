package security_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/tenant"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// tenantWorkloads are every builder's workload in namespace, on CPUs
// where the builder runs there, else on one H100 (serving engines, verl,
// local evaluation), else on one Ascend 910B3 (MindIE).
func tenantWorkloads(t *testing.T, namespace string) map[string]cube.Workload {
	out := map[string]cube.Workload{}
	for _, bc := range builderCases() {
		for _, p := range []hardware.Profile{hardware.CPU, hardware.H100, hardware.Ascend910B3} {
			w := bc.make(setting{profile: p, namespace: namespace})
			if _, err := w.Objects(); err == nil {
				out[bc.name] = w
				break
			}
		}
		if out[bc.name] == nil {
			t.Errorf("%s renders on none of CPU, H100 and Ascend 910B3", bc.name)
		}
	}
	return out
}

// TestClientRulesNameServedResources checks the plural ClientRules
// derives from each kind of every builder against the API server's
// discovery: a wrong guess would be a rule that grants nothing.
func TestClientRulesNameServedResources(t *testing.T) {
	env := testenv.Get(t)
	mapper := env.Client.RESTMapper()
	for name, w := range tenantWorkloads(t, "team-a") {
		objs, err := w.Objects()
		require.NoError(t, err, name)
		rules, err := cube.ClientRules(w)
		require.NoError(t, err, name)
		for _, o := range objs {
			gvk := o.GetObjectKind().GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			require.NoError(t, err, "%s: %s", name, gvk)
			found := false
			for _, r := range rules {
				if r.APIGroups[0] == m.Resource.Group && r.Resources[0] == m.Resource.Resource {
					found = true
					assert.ElementsMatch(t, []string{"create", "delete", "get", "list", "patch", "watch"}, r.Verbs, "%s: %s", name, m.Resource)
				}
			}
			assert.True(t, found, "%s: no rule for %s, which the server serves as %s", name, gvk, m.Resource)
		}
	}
}

// TestTenantEditorsMayApplyEveryBuilder applies a tenant, then, as one of
// its editors (impersonated), applies, follows and deletes the workload
// of every builder in the tenant's namespace: the tenant's Roles are
// enough for every kind cube creates there, without the ClusterRole edit,
// which nothing aggregates on this server.
func TestTenantEditorsMayApplyEveryBuilder(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := env.Client.Delete(ctx, &vcscheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete queue %s: %v", ns, err)
		}
	})
	admin := cube.NewFromClient(env.Client, cube.Namespace(ns))
	_, err := admin.Apply(ctx, tenant.New(ns).Editors("alice").Viewers("bob"))
	require.NoError(t, err)

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
	cl, err := client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	alice := cube.NewFromClient(cl, cube.Namespace(ns), cube.Clientset(cs))

	// RBAC reads roles through informers.
	require.Eventually(t, func() bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice",
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: "kubeflow.org", Resource: "pytorchjobs"}}}
		return env.Client.Create(ctx, sar) == nil && sar.Status.Allowed
	}, 30*time.Second, 50*time.Millisecond)

	// Editors read their namespace, so Apply's Pod Security check runs
	// for them too instead of being skipped.
	ps := tenant.New(ns) // baseline, as applied
	for name, w := range tenantWorkloads(t, ns) {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, tenant.Admits(ps, w), "pods without an RDMA fabric need no more than baseline")
			rel, err := alice.Apply(ctx, w)
			require.NoError(t, err, "an editor applies %s", name)
			_, err = rel.Status(ctx)
			require.NoError(t, err)
			require.NoError(t, rel.Delete(ctx))
		})
	}

	// ...and a workload the level refuses is refused by cube, before the
	// API server stores it.
	rdma := caseNamed(t, "train-pytorch").make(setting{profile: hardware.H100, fabric: hardware.InfiniBand()})
	_, err = alice.Apply(ctx, rdma)
	var psErr *cube.PodSecurityError
	require.ErrorAs(t, err, &psErr, "the editor's Apply checked the namespace's level")

	// What ClientRules names for the builders, the editor's Roles grant.
	for name, w := range tenantWorkloads(t, ns) {
		rules, err := cube.ClientRules(w)
		require.NoError(t, err)
		for _, r := range rules {
			for _, verb := range r.Verbs {
				attrs := &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: r.APIGroups[0], Resource: r.Resources[0]}
				if gr := (schema.GroupResource{Group: r.APIGroups[0], Resource: r.Resources[0]}); gr.Resource == "namespaces" {
					attrs.Name = ns
				} else if res, sub, ok := strings.Cut(gr.Resource, "/"); ok {
					attrs.Resource, attrs.Subresource = res, sub
				}
				sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: attrs}}
				require.NoError(t, env.Client.Create(ctx, sar))
				assert.True(t, sar.Status.Allowed, "%s: an editor may %s %s.%s", name, verb, r.Resources[0], r.APIGroups[0])
			}
		}
	}
}

func caseNamed(t *testing.T, name string) builderCase {
	for _, bc := range builderCases() {
		if bc.name == name {
			return bc
		}
	}
	t.Fatalf("no builder case %s", name)
	return builderCase{}
}
