package security_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

func secret(name, key, value string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: cube.Identity{Kind: "secret", Release: name}.ObjectMeta(name, "", nil, nil),
		Data:       map[string][]byte{key: []byte(value)},
	}
}

// TestApplyErrorsNeverHoldASecretsValue makes Apply fail on Secrets in
// the ways the API server refuses them (another manager owns the value,
// a key the server rejects, an immutable Secret changed) and checks that
// no error, status or description carries the values.
func TestApplyErrorsNeverHoldASecretsValue(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	c := cube.NewFromClient(env.Client, cube.Namespace(ns))
	const theirs, ours = "sk-TheirsPlanted0123456789abcdefghij", "sk-OursPlanted0123456789abcdefghijkl"

	// Another manager owns the value: a conflict.
	s := secret("tokens", "token", theirs)
	s.Namespace = ns
	require.NoError(t, env.Client.Patch(ctx, s, client.Apply, client.FieldOwner("someone-else")))
	_, err := c.Apply(ctx, cube.Objects(secret("tokens", "token", ours)))
	require.Error(t, err)
	require.True(t, cube.IsConflict(err), "%v", err)
	assertNoCredential(t, err.Error(), theirs, "a conflict")
	assertNoCredential(t, err.Error(), ours, "a conflict")

	// A key the server rejects.
	_, err = c.Apply(ctx, cube.Objects(secret("bad-key", "not a key", ours)))
	require.Error(t, err)
	assertNoCredential(t, err.Error(), ours, "an invalid Secret")

	// An immutable Secret changed.
	im := secret("sealed", "token", theirs)
	im.Immutable = new(bool)
	*im.Immutable = true
	rel, err := c.Apply(ctx, cube.Objects(im))
	require.NoError(t, err)
	changed := secret("sealed", "token", ours)
	changed.Immutable = im.Immutable
	_, err = c.Apply(ctx, cube.Objects(changed))
	require.Error(t, err)
	assertNoCredential(t, err.Error(), theirs, "an immutable Secret")
	assertNoCredential(t, err.Error(), ours, "an immutable Secret")

	st, err := rel.Status(ctx)
	require.NoError(t, err)
	assertNoCredential(t, st.String(), theirs, "the release's status")
}
