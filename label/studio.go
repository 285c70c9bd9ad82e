package label

import (
	"errors"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pod"
)

// Pinned images and the Label Studio server's facts.
const (
	// DefaultStudioImage is the Label Studio the client and the ML
	// backend protocol are written against.
	DefaultStudioImage = "heartexlabs/label-studio:1.13.1"
	// DefaultPostgresImage runs the bundled database (Postgres).
	DefaultPostgresImage = "postgres:16.4"
	// StudioPort is Label Studio's port (INTERNAL_PORT in
	// label_studio/core/settings/base.py).
	StudioPort = 8080
	// StudioDataDir is where the image keeps its SQLite database and
	// uploaded files (LABEL_STUDIO_BASE_DATA_DIR in its Dockerfile).
	StudioDataDir = "/label-studio/data"
	// StudioUID is the image's user: its Dockerfile runs `chown -R 1001:0`
	// over /label-studio and its data directory and ends with USER 1001.
	// Images that start as root and drop to a user of their own with gosu
	// (deploy/docker-entrypoint.sh of some releases) need root instead:
	// give them a PodSecurityContext, which replaces this default.
	StudioUID = 1001
	// DefaultStudioStorage sizes the data claim.
	DefaultStudioStorage = "10Gi"
	// StudioKind is the cube.dev/kind of a Studio's objects.
	StudioKind = "labelstudio"
)

// Keys of the Secret named with ExternalDatabase.
const (
	DatabaseHostKey     = "host"
	DatabasePortKey     = "port"
	DatabaseNameKey     = "name"
	DatabaseUserKey     = "user"
	DatabasePasswordKey = "password"
)

// StudioServer is Label Studio as a cube.Workload: a Deployment of one
// pod (Recreate, because its data claim is ReadWriteOnce) with a data
// claim, a ClusterIP Service, and optionally a bundled PostgreSQL
// (Postgres) or an existing database (ExternalDatabase) instead of the
// SQLite file on the claim. The admin user and the API token come from
// Secrets through secretKeyRef; the environment variables are those Label
// Studio reads (get_env looks up NAME and LABEL_STUDIO_NAME,
// label_studio/core/utils/params.py): LABEL_STUDIO_USERNAME,
// LABEL_STUDIO_PASSWORD and LABEL_STUDIO_USER_TOKEN (_create_user in
// label_studio/server.py), DJANGO_DB and POSTGRE_HOST, POSTGRE_PORT,
// POSTGRE_NAME, POSTGRE_USER, POSTGRE_PASSWORD (DATABASES_ALL in
// label_studio/core/settings/base.py).
//
// Its settings are its own methods and every pod setting of the embedded
// pod.Builder (image, resources, placement, extra env).
type StudioServer struct {
	pod.Builder[StudioServer]

	user, password            pod.SecretKeyRef
	tokenSecret, tokenKey     string
	storageSize, storageClass string
	host                      string
	signup                    bool

	// pg is set by Postgres, so that a Postgres with an empty password
	// reference is refused rather than ignored.
	pg              bool
	pgPassword      pod.SecretKeyRef
	pgSize, pgClass string
	externalDB      string
}

// Studio returns a Label Studio server named name.
func Studio(name string) *StudioServer {
	s := &StudioServer{storageSize: DefaultStudioStorage}
	podspec.Of(&s.Handle).Init(s, StudioKind, name)
	return s
}

// Admin sets the Secret keys holding the admin's e-mail (the login, user)
// and password. It is required.
func (s *StudioServer) Admin(user, password pod.SecretKeyRef) *StudioServer {
	if s == nil {
		return nil
	}
	s.user, s.password = user, password
	return s
}

// Token names the Secret and key of the admin's API token, which
// Label Studio sets at first start and Client sends. It is required.
func (s *StudioServer) Token(ref pod.SecretKeyRef) *StudioServer {
	if s == nil {
		return nil
	}
	s.tokenSecret, s.tokenKey = ref.Name, ref.Key
	return s
}

// Storage sets the size and storage class of the data claim.
func (s *StudioServer) Storage(size, storageClass string) *StudioServer {
	if s == nil {
		return nil
	}
	s.storageSize, s.storageClass = size, storageClass
	return s
}

// Host sets the external URL Label Studio builds links with
// (LABEL_STUDIO_HOST), e.g. "https://cube.example.com/labelstudio". A URL
// with credentials (user:password@) is refused: it would be a literal in
// the Deployment.
func (s *StudioServer) Host(u string) *StudioServer {
	if s == nil {
		return nil
	}
	s.host = u
	return s
}

// AllowSignup lets anyone reach the sign-up page; by default only invite
// links do (LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK=true).
func (s *StudioServer) AllowSignup() *StudioServer {
	if s == nil {
		return nil
	}
	s.signup = true
	return s
}

// Postgres deploys a PostgreSQL beside Label Studio, with its own claim
// of size and storageClass, and the superuser password from the Secret key
// password.
func (s *StudioServer) Postgres(password pod.SecretKeyRef, size, storageClass string) *StudioServer {
	if s == nil {
		return nil
	}
	s.pg, s.pgPassword, s.pgSize, s.pgClass = true, password, size, storageClass
	return s
}

// ExternalDatabase points Label Studio at an existing PostgreSQL whose
// host, port, name, user and password are the keys DatabaseHostKey…
// DatabasePasswordKey of Secret secret.
func (s *StudioServer) ExternalDatabase(secret string) *StudioServer {
	if s == nil {
		return nil
	}
	s.externalDB = secret
	return s
}

// PostgresName names the bundled database's Deployment, Service and claim.
func PostgresName(name string) string { return name + "-postgres" }

// DataClaimName names the Studio's data claim.
func DataClaimName(name string) string { return name + "-data" }

var errNilStudio = errors.New("label: the *StudioServer is nil: make one with Studio")

// Objects validates the server and returns its data claim, Service and
// Deployment, preceded by the bundled PostgreSQL's claim, Service and
// Deployment when Postgres was called.
func (s *StudioServer) Objects() ([]client.Object, error) {
	if s == nil {
		return nil, errNilStudio
	}
	objs, errs := s.render()
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return objs, nil
}

// Build validates the server and returns Label Studio's Deployment.
func (s *StudioServer) Build() (*appsv1.Deployment, error) {
	objs, err := s.Objects()
	if err != nil {
		return nil, err
	}
	return objs[len(objs)-1].(*appsv1.Deployment), nil
}

func (s *StudioServer) secretRef(p *field.Path, name, secret, key string, errs *field.ErrorList) corev1.EnvVar {
	if secret == "" || key == "" {
		*errs = append(*errs, field.Required(p, "a Secret and key are required"))
	} else {
		*errs = append(*errs, podspec.ValidateSecretKey(p, secret, key)...)
	}
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key,
	}}}
}

func (s *StudioServer) render() ([]client.Object, field.ErrorList) {
	errs := podspec.Of(&s.Handle).ValidateServiceMeta(63 - len("-postgres"))
	name := podspec.Of(&s.Handle).Name()
	env := []corev1.EnvVar{
		s.secretRef(field.NewPath("admin", "user"), "LABEL_STUDIO_USERNAME", s.user.Name, s.user.Key, &errs),
		s.secretRef(field.NewPath("admin", "password"), "LABEL_STUDIO_PASSWORD", s.password.Name, s.password.Key, &errs),
		s.secretRef(field.NewPath("token"), "LABEL_STUDIO_USER_TOKEN", s.tokenSecret, s.tokenKey, &errs),
		{Name: "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK", Value: strconv.FormatBool(!s.signup)},
	}
	if s.host != "" {
		// The URL goes into the Deployment as a literal: credentials would
		// be readable by anyone who reads the Deployment, and links need
		// only the public URL.
		if err := checkHTTPURL(field.NewPath("host"), s.host, "the public URL Label Studio builds links with (LABEL_STUDIO_HOST)"); err != nil {
			errs = append(errs, err)
		} else if u, _ := url.Parse(s.host); slices.ContainsFunc(strings.Split(u.Path, "/"), func(seg string) bool { return seg == "." || seg == ".." }) {
			errs = append(errs, field.Invalid(field.NewPath("host"), u.Redacted(), "must not hold . or .. path segments: the path after the host prefixes every link Label Studio builds"))
		} else if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
			// Everything after the host becomes Django's FORCE_SCRIPT_NAME
			// (HOSTNAME in label_studio/core/settings/base.py), the prefix
			// of every link.
			errs = append(errs, field.Invalid(field.NewPath("host"), u.Redacted(), "must not carry a query or a fragment: Label Studio prefixes every link with the path after the host"))
		}
		env = append(env, corev1.EnvVar{Name: "LABEL_STUDIO_HOST", Value: s.host})
	}
	var dbObjs []client.Object
	switch {
	case s.pg && s.externalDB != "":
		errs = append(errs, field.Forbidden(field.NewPath("externalDatabase"), "Postgres and ExternalDatabase are both set: pick one"))
	case s.pg:
		env = append(env,
			corev1.EnvVar{Name: "DJANGO_DB", Value: "default"},
			corev1.EnvVar{Name: "POSTGRE_HOST", Value: PostgresName(name)},
			corev1.EnvVar{Name: "POSTGRE_PORT", Value: "5432"},
			corev1.EnvVar{Name: "POSTGRE_NAME", Value: "labelstudio"},
			corev1.EnvVar{Name: "POSTGRE_USER", Value: "postgres"},
			s.secretRef(field.NewPath("postgres", "password"), "POSTGRE_PASSWORD", s.pgPassword.Name, s.pgPassword.Key, &errs),
		)
		var pgErrs field.ErrorList
		dbObjs, pgErrs = s.postgres()
		errs = append(errs, pgErrs...)
	case s.externalDB != "":
		p := field.NewPath("externalDatabase")
		env = append(env, corev1.EnvVar{Name: "DJANGO_DB", Value: "default"})
		for _, kv := range [][2]string{{"POSTGRE_HOST", DatabaseHostKey}, {"POSTGRE_PORT", DatabasePortKey}, {"POSTGRE_NAME", DatabaseNameKey}, {"POSTGRE_USER", DatabaseUserKey}, {"POSTGRE_PASSWORD", DatabasePasswordKey}} {
			env = append(env, s.secretRef(p, kv[0], s.externalDB, kv[1], &errs))
		}
	}
	claim, claimErrs := s.claim(DataClaimName(name), s.storageSize, s.storageClass, field.NewPath("storage"))
	errs = append(errs, claimErrs...)

	id := podspec.Of(&s.Handle).Identity()
	selector := id.Selector("studio")
	tmplPath := field.NewPath("spec", "template")
	tmpl, tmplErrs := podspec.Of(&s.Handle).Template(tmplPath, podspec.TemplateOptions{
		Container: "label-studio", DefaultImage: DefaultStudioImage,
		Labels: map[string]string{"app.kubernetes.io/component": "studio"},
	})
	errs = append(errs, tmplErrs...)
	if len(errs) > 0 {
		return nil, errs
	}
	c := &tmpl.Spec.Containers[0]
	for _, e := range env {
		if hasEnv(c.Env, e.Name) {
			// The credentials and the database are the Studio's to set,
			// from Secrets: an Env of the same name would replace them,
			// perhaps with a literal.
			errs = append(errs, field.Forbidden(field.NewPath("env").Key(e.Name), "set by Admin, Token, Host, AllowSignup, Postgres or ExternalDatabase"))
			continue
		}
		c.Env = append(c.Env, e)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: "http", ContainerPort: StudioPort, Protocol: corev1.ProtocolTCP})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: StudioDataDir})
	tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name},
	}})
	// /health answers {"status": "UP"} once Django serves
	// (label_studio/core/urls.py, core/views.py health).
	health := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("http")}}
	// Migrations run before the server listens: give them ten minutes.
	c.StartupProbe = &corev1.Probe{ProbeHandler: *health.DeepCopy(), PeriodSeconds: 10, FailureThreshold: 60, TimeoutSeconds: 5}
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: *health.DeepCopy(), PeriodSeconds: 10, FailureThreshold: 3, TimeoutSeconds: 5}
	c.LivenessProbe = &corev1.Probe{ProbeHandler: health, PeriodSeconds: 30, FailureThreshold: 5, TimeoutSeconds: 10}
	if tmpl.Spec.SecurityContext == nil {
		tmpl.Spec.SecurityContext = &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](StudioUID), FSGroup: ptr.To[int64](StudioUID),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
	}
	// The image's user needs no privilege: the rest of what the restricted
	// Pod Security level asks, for what the caller left unset.
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	if sc := c.SecurityContext; !ptr.Deref(sc.Privileged, false) {
		if sc.AllowPrivilegeEscalation == nil {
			sc.AllowPrivilegeEscalation = ptr.To(false)
		}
		if sc.Capabilities == nil {
			sc.Capabilities = &corev1.Capabilities{}
		}
		if len(sc.Capabilities.Drop) == 0 {
			sc.Capabilities.Drop = []corev1.Capability{"ALL"}
		}
	}
	deploy := s.deployment(name, selector, tmpl)
	svc := s.service(name, selector, StudioPort)
	return append(dbObjs, claim, svc, deploy), nil
}

func hasEnv(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// claim renders a data claim; p is the field of its options (storage,
// postgres), under which the size is reported as p.size.
func (s *StudioServer) claim(name, size, class string, p *field.Path) (*corev1.PersistentVolumeClaim, field.ErrorList) {
	var errs field.ErrorList
	q, err := podspec.ParseStorageSize(p.Child("size"), size)
	if err != nil {
		errs = append(errs, err)
	}
	c := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: podspec.Of(&s.Handle).ObjectMeta(name),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: q}},
		},
	}
	if class != "" {
		// The API server refuses any other storageClassName.
		for _, msg := range validation.IsDNS1123Subdomain(class) {
			errs = append(errs, field.Invalid(p.Child("storageClass"), class, msg))
		}
		c.Spec.StorageClassName = ptr.To(class)
	}
	return c, errs
}

func (s *StudioServer) service(name string, selector map[string]string, port int32) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: podspec.Of(&s.Handle).ObjectMeta(name),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: maps.Clone(selector),
			Ports:    []corev1.ServicePort{{Name: "tcp", Port: port, TargetPort: intstr.FromInt32(port), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// deployment renders a single-replica Deployment that replaces its pod
// rather than rolling (the pod holds a ReadWriteOnce claim), with the
// selector's labels added to the template's.
func (s *StudioServer) deployment(name string, selector map[string]string, tmpl corev1.PodTemplateSpec) *appsv1.Deployment {
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	maps.Copy(tmpl.Labels, selector)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: podspec.Of(&s.Handle).ObjectMeta(name),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: tmpl,
		},
	}
}

// postgres renders the bundled database: the environment of the official
// image (POSTGRES_PASSWORD, POSTGRES_DB, PGDATA below the mount, as its
// docker-entrypoint.sh reads them) and pg_isready as readiness.
func (s *StudioServer) postgres() ([]client.Object, field.ErrorList) {
	name := PostgresName(podspec.Of(&s.Handle).Name())
	size := s.pgSize
	if size == "" {
		size = DefaultStudioStorage
	}
	claim, errs := s.claim(name, size, s.pgClass, field.NewPath("postgres"))
	selector := podspec.Of(&s.Handle).Identity().Selector("postgres")
	labels := podspec.Of(&s.Handle).PodLabels(map[string]string{"app.kubernetes.io/component": "postgres"})
	ready := corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"pg_isready", "-U", "postgres", "-d", "labelstudio"}}}
	deploy := s.deployment(name, selector, corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "postgres",
				Image: DefaultPostgresImage,
				Env: []corev1.EnvVar{
					{Name: "POSTGRES_DB", Value: "labelstudio"},
					{Name: "PGDATA", Value: "/var/lib/postgresql/data/pgdata"},
					{Name: "POSTGRES_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: s.pgPassword.Name}, Key: s.pgPassword.Key,
					}}},
				},
				Ports:          []corev1.ContainerPort{{Name: "postgres", ContainerPort: 5432, Protocol: corev1.ProtocolTCP}},
				VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/postgresql/data"}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: *ready.DeepCopy(), PeriodSeconds: 5, TimeoutSeconds: 5},
				LivenessProbe:  &corev1.Probe{ProbeHandler: ready, PeriodSeconds: 30, TimeoutSeconds: 5, FailureThreshold: 5},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name},
			}}},
		},
	})
	return []client.Object{claim, s.service(name, selector, 5432), deploy}, errs
}
