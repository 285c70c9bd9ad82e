package cube_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cubestudio/cube"
)

func TestAsQuotaExceeded(t *testing.T) {
	msg := `exceeded quota: team-a, requested: limits.cpu=2,requests.nvidia.com/gpu=16, used: limits.cpu=0,requests.nvidia.com/gpu=0, limited: limits.cpu=64,requests.nvidia.com/gpu=8`
	apiErr := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "big", errors.New(msg))
	wrapped := fmt.Errorf("apply Pod team-a/big: %w", apiErr)
	qe, ok := cube.AsQuotaExceeded(wrapped)
	require.True(t, ok)
	assert.Equal(t, "team-a", qe.Quota)
	assert.Equal(t, "limits.cpu=2,requests.nvidia.com/gpu=16", qe.Requested)
	assert.Equal(t, "limits.cpu=0,requests.nvidia.com/gpu=0", qe.Used)
	assert.Equal(t, "limits.cpu=64,requests.nvidia.com/gpu=8", qe.Limited)
	assert.Equal(t, "exceeded quota team-a: requested limits.cpu=2,requests.nvidia.com/gpu=16, used limits.cpu=0,requests.nvidia.com/gpu=0, limited to limits.cpu=64,requests.nvidia.com/gpu=8", qe.Error())
	assert.True(t, apierrors.IsForbidden(qe), "the API error is kept")
	again, ok := cube.AsQuotaExceeded(fmt.Errorf("retry: %w", qe))
	assert.True(t, ok)
	assert.Same(t, qe, again)

	_, ok = cube.AsQuotaExceeded(apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New(`violates PodSecurity "baseline:latest"`)))
	assert.False(t, ok, "other refusals are not quota")
	_, ok = cube.AsQuotaExceeded(errors.New("exceeded quota: team-a"))
	assert.False(t, ok, "only the API server's refusals")
	_, ok = cube.AsQuotaExceeded(nil)
	assert.False(t, ok)
}

// FuzzAsQuotaExceeded feeds arbitrary API-server messages to the parser:
// it never panics, recognises only quota refusals, and gives back the
// parts of a well-formed message.
func FuzzAsQuotaExceeded(f *testing.F) {
	f.Add("team-a", "requests.nvidia.com/gpu=16", "requests.nvidia.com/gpu=0", "requests.nvidia.com/gpu=8", "")
	f.Add("q", "limits.cpu=2,requests.cpu=2", "limits.cpu=1,requests.cpu=1", "limits.cpu=2,requests.cpu=2", "pods \"x\" is forbidden: ")
	f.Add("", "", "", "", "exceeded quota: ")
	f.Fuzz(func(t *testing.T, quota, requested, used, limited, prefix string) {
		msg := prefix + "exceeded quota: " + quota + ", requested: " + requested + ", used: " + used + ", limited: " + limited
		err := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New(msg))
		qe, ok := cube.AsQuotaExceeded(err)
		require.True(t, ok)
		require.NotNil(t, qe)
		_ = qe.Error()
		unambiguous := true
		for _, sep := range []string{"exceeded quota: ", ", requested: ", ", used: ", ", limited: "} {
			unambiguous = unambiguous && strings.Count(msg, sep) == 1
		}
		if unambiguous {
			assert.Equal(t, [4]string{quota, requested, used, limited}, [4]string{qe.Quota, qe.Requested, qe.Used, qe.Limited})
		}
		_, ok = cube.AsQuotaExceeded(apierrors.NewBadRequest(msg))
		assert.False(t, ok, "only Forbidden refusals")
	})
}
