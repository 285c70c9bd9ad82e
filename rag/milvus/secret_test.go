package milvus

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func TestEnvTakesCredentialsFromTheSecretOnly(t *testing.T) {
	env := Env("milvus-nlp", "nlp_handbook", 384)
	require.Len(t, env, 4)
	for _, e := range env[:2] {
		assert.Empty(t, e.Value, "%s is no literal", e.Name)
		require.NotNil(t, e.ValueFrom)
		assert.Equal(t, "milvus-nlp", e.ValueFrom.SecretKeyRef.Name)
	}
	assert.Equal(t, corev1.EnvVar{Name: EnvToken, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "milvus-nlp"}, Key: SecretKeyToken}}}, env[1])
	assert.Equal(t, corev1.EnvVar{Name: EnvDimensions, Value: "384"}, env[3])
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv(EnvAddress, "milvus:19530")
	t.Setenv(EnvToken, "root:s3cret")
	t.Setenv(EnvCollection, "nlp_handbook")
	t.Setenv(EnvDimensions, "384")
	c, err := ConfigFromEnv()
	require.NoError(t, err)
	assert.Equal(t, Config{Address: "milvus:19530", APIKey: "root:s3cret", Collection: "nlp_handbook", Dimensions: 384}, c)
	assert.NotContains(t, c.String(), "s3cret")
	assert.NotContains(t, fmt.Sprint(c), "s3cret")

	t.Setenv(EnvAddress, "")
	t.Setenv(EnvCollection, "")
	t.Setenv(EnvDimensions, "many")
	_, err = ConfigFromEnv()
	require.Error(t, err)
	for _, want := range []string{EnvAddress + ": unset", EnvCollection + ": unset", EnvDimensions + `: "many"`} {
		assert.Contains(t, err.Error(), want)
	}
}
