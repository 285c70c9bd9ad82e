package label_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/pod"
)

func studio() *label.StudioServer {
	return label.Studio("labels").Namespace("team-a").Admin(pod.SecretKeyRef{Name: "ls-admin", Key: "email"}, pod.SecretKeyRef{Name: "ls-admin", Key: "password"}).Token(pod.SecretKeyRef{Name: "ls-admin", Key: "token"}).CPU("2").Memory("4Gi")
}

func envOf(c corev1.Container) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		out[e.Name] = e
	}
	return out
}

func secretOf(t *testing.T, e corev1.EnvVar) string {
	t.Helper()
	require.Empty(t, e.Value, "%s must not be a literal", e.Name)
	require.NotNil(t, e.ValueFrom, e.Name)
	return e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
}

func TestStudioRendersDeploymentClaimService(t *testing.T) {
	objs, err := studio().Objects()
	require.NoError(t, err)
	require.Len(t, objs, 3)
	claim := objs[0].(*corev1.PersistentVolumeClaim)
	assert.Equal(t, "labels-data", claim.Name)
	assert.Equal(t, "10Gi", claim.Spec.Resources.Requests.Storage().String())
	svc := objs[1].(*corev1.Service)
	assert.Equal(t, int32(8080), svc.Spec.Ports[0].Port)
	d := objs[2].(*appsv1.Deployment)
	assert.Equal(t, appsv1.RecreateDeploymentStrategyType, d.Spec.Strategy.Type)
	assert.Equal(t, svc.Spec.Selector, d.Spec.Selector.MatchLabels)
	c := d.Spec.Template.Spec.Containers[0]
	assert.Equal(t, label.DefaultStudioImage, c.Image)
	env := envOf(c)
	assert.Equal(t, "ls-admin/email", secretOf(t, env["LABEL_STUDIO_USERNAME"]))
	assert.Equal(t, "ls-admin/password", secretOf(t, env["LABEL_STUDIO_PASSWORD"]))
	assert.Equal(t, "ls-admin/token", secretOf(t, env["LABEL_STUDIO_USER_TOKEN"]))
	assert.Equal(t, "true", env["LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK"].Value)
	assert.NotContains(t, env, "DJANGO_DB", "SQLite on the claim by default")
	assert.Equal(t, "/health", c.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, int32(60), c.StartupProbe.FailureThreshold)
	assert.Equal(t, label.StudioDataDir, c.VolumeMounts[0].MountPath)
	assert.Equal(t, "labels-data", d.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
	assert.Equal(t, "2", c.Resources.Limits.Cpu().String())
	assert.Equal(t, int64(label.StudioUID), *d.Spec.Template.Spec.SecurityContext.RunAsUser)
}

func TestStudioDatabases(t *testing.T) {
	objs, err := studio().Postgres(pod.SecretKeyRef{Name: "ls-db", Key: "password"}, "20Gi", "fast").Objects()
	require.NoError(t, err)
	require.Len(t, objs, 6)
	pg := objs[2].(*appsv1.Deployment)
	assert.Equal(t, "labels-postgres", pg.Name)
	assert.Equal(t, "ls-db/password", secretOf(t, envOf(pg.Spec.Template.Spec.Containers[0])["POSTGRES_PASSWORD"]))
	assert.Equal(t, "fast", *objs[0].(*corev1.PersistentVolumeClaim).Spec.StorageClassName)
	env := envOf(objs[5].(*appsv1.Deployment).Spec.Template.Spec.Containers[0])
	assert.Equal(t, "default", env["DJANGO_DB"].Value)
	assert.Equal(t, "labels-postgres", env["POSTGRE_HOST"].Value)
	assert.Equal(t, "ls-db/password", secretOf(t, env["POSTGRE_PASSWORD"]))

	d, err := studio().ExternalDatabase("rds").Build()
	require.NoError(t, err)
	env = envOf(d.Spec.Template.Spec.Containers[0])
	for _, k := range []string{"POSTGRE_HOST", "POSTGRE_PORT", "POSTGRE_NAME", "POSTGRE_USER", "POSTGRE_PASSWORD"} {
		assert.Contains(t, secretOf(t, env[k]), "rds/", k)
	}
}

func TestStudioErrors(t *testing.T) {
	_, err := label.Studio("Bad_Name").Storage("lots", "").Host("ftp://x").Postgres(pod.SecretKeyRef{Name: "a", Key: "b"}, "", "").ExternalDatabase("c").
		Env("LABEL_STUDIO_PASSWORD", "hunter2-literal").Objects()
	require.Error(t, err)
	for _, want := range []string{
		"metadata.name: Invalid value", "admin.user: Required value", "admin.password: Required value",
		"token: Required value", "storage.size: Invalid value", "host: Invalid value",
		"externalDatabase: Forbidden",
	} {
		assert.ErrorContains(t, err, want)
	}
	_, err = studio().Env("LABEL_STUDIO_PASSWORD", "hunter2").Env("POSTGRE_HOST", "db").Objects()
	assert.ErrorContains(t, err, "env[LABEL_STUDIO_PASSWORD]: Forbidden: set by Admin")
	assert.NotContains(t, err.Error(), "POSTGRE_HOST", "only the variables the Studio sets are refused")

	_, err = studio().Host("https://admin:hunter2@labels.example.com").Objects()
	assert.ErrorContains(t, err, `host: Invalid value: "https://admin:xxxxx@labels.example.com": must not carry credentials`)
	assert.NotContains(t, err.Error(), "hunter2", "the error never repeats the password")

	// A Postgres without a password reference is refused, not ignored.
	_, err = studio().Postgres(pod.SecretKeyRef{}, "1Gi", "").Objects()
	assert.ErrorContains(t, err, "postgres.password: Required value")

	var nilStudio *label.StudioServer
	_, err = nilStudio.Admin(pod.SecretKeyRef{Name: "a", Key: "b"}, pod.SecretKeyRef{Name: "a", Key: "c"}).Objects()
	assert.ErrorContains(t, err, "the *StudioServer is nil")
	_, err = (&label.StudioServer{}).Objects()
	assert.ErrorContains(t, err, "metadata.name: Required value")
}
