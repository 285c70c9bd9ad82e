package notebook

import (
	"maps"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pod"
)

// IDE is the kind of server a notebook runs.
type IDE string

// The IDEs a notebook can run.
const (
	IDEJupyter IDE = "jupyter"
	IDEVSCode  IDE = "vscode"
	IDERStudio IDE = "rstudio"
)

// Kind is the builder kind of every notebook, recorded in the cube.dev/kind
// label; LabelIDE tells the three servers apart.
const Kind = "notebook"

// Labels and annotations a notebook carries. Cull, Stop, Start and Renew read
// and write them; they are part of the package's contract with the cluster.
const (
	// LabelIDE is jupyter, vscode or rstudio.
	LabelIDE = "notebook.cube.dev/ide"
	// LabelUser is the notebook's owner, as given to the constructor.
	LabelUser = "notebook.cube.dev/user"
	// AnnotationBaseURL is the path Jupyter serves under; Cull reads
	// /api/status below it.
	AnnotationBaseURL = "notebook.cube.dev/base-url"
	// AnnotationMaxLifetime is how long a notebook may run after its creation
	// or last renewal (a Go duration, "72h"): Cube Studio's expiry.
	AnnotationMaxLifetime = "notebook.cube.dev/max-lifetime"
	// AnnotationRenewedAt is when the notebook was last renewed (RFC 3339),
	// written by Renew and Start. Without it the creation time counts.
	AnnotationRenewedAt = "notebook.cube.dev/renewed-at"
	// AnnotationStopReason says why Cull stopped a notebook; Start removes it.
	AnnotationStopReason = "notebook.cube.dev/stop-reason"
)

// Default images, one per IDE, overridable with Image. They are the
// upstream images whose users the security context matches: jovyan (1000,
// group users 100) in the Jupyter Docker Stacks, coder (1000) in code-server,
// rstudio (1000) in Rocker.
const (
	DefaultJupyterImage = "quay.io/jupyter/scipy-notebook:2025-03-14"
	DefaultVSCodeImage  = "codercom/code-server:4.96.4"
	DefaultRStudioImage = "rocker/rstudio:4.4.2"
)

// DefaultStorage is the size of the home volume unless Storage says otherwise.
const DefaultStorage = "10Gi"

// MaxNameLength bounds a notebook's name: the StatefulSet controller labels
// its pod with the name plus an 11-character revision hash, which must fit in
// 63 characters.
const MaxNameLength = 52

// Notebook builds a single-user workspace — Jupyter, VS Code (code-server) or
// RStudio — as a StatefulSet of one pod whose home directory lives on a
// volume claim template, so the home follows the pod and survives Stop. A
// headless Service governs the StatefulSet, a ClusterIP Service is the stable
// address of the UI, and a NetworkPolicy admits only the sources named with
// AllowNamespace and AllowPods.
//
// Pod settings (image, env, CPU, memory, GPUs, vGPU slices, hardware
// profiles, /dev/shm, extra volumes, placement) come from the embedded
// pod.Builder. Methods never fail; Objects reports every problem at once.
type Notebook struct {
	pod.Builder[Notebook]

	ide          IDE
	user         string
	baseURL      string
	baseURLSet   bool
	secretName   string
	secretKey    string
	secretSet    bool
	storageSize  string
	storageClass string
	homeDir      string
	port         int32
	maxLifetime  time.Duration
	allow        []networkingv1.NetworkPolicyPeer
	launcher     Launcher
	launcherSet  bool
	problems     field.ErrorList
}

// Launcher says how a Jupyter image starts its server. Images differ:
// cube's default image and every Jupyter Docker Stacks image start through
// start-notebook.py; Kubeflow's notebook images start Jupyter from their
// own s6 service and read the base URL from NB_PREFIX; any other image with
// Jupyter Server installed runs `jupyter server`.
type Launcher string

// The launchers of a Jupyter notebook. Every one serves under the notebook's
// base URL, which is also set in NB_PREFIX, the variable Kubeflow's images
// and notebook controller use.
const (
	// LaunchDockerStacks runs start-notebook.py under the image's own
	// entrypoint (tini and start.sh) with the ServerApp's address, port,
	// base URL and root directory. It is the default.
	LaunchDockerStacks Launcher = "docker-stacks"
	// LaunchKubeflow passes no command or arguments: the image's /init (s6)
	// runs `jupyter lab` on port 8888 with the home as notebook directory
	// and --ServerApp.base_url=$NB_PREFIX (Kubeflow's
	// components/example-notebook-servers/jupyter/s6/services.d/jupyterlab/run).
	// Those images also pass --ServerApp.token="", so their server ignores
	// the token: only the NetworkPolicy (AllowNamespace, AllowPods) and an
	// authenticating proxy in front of it stand between the notebook and
	// its callers. ServerPort and HomeDir cannot change what the image
	// fixes and are refused.
	LaunchKubeflow Launcher = "kubeflow"
	// LaunchJupyterServer runs `jupyter server` with the same ServerApp
	// settings as LaunchDockerStacks, replacing the image's entrypoint: for
	// images that install Jupyter Server (and JupyterLab) without the Docker
	// Stacks' scripts. The token comes from JUPYTER_TOKEN, which Jupyter
	// Server reads itself.
	LaunchJupyterServer Launcher = "jupyter-server"
)

// Launch sets how a Jupyter image starts its server (default
// LaunchDockerStacks). Only Jupyter notebooks take it.
func (n *Notebook) Launch(l Launcher) *Notebook {
	if n == nil {
		return nil
	}
	n.launcher, n.launcherSet = l, true
	return n
}

// Jupyter returns a JupyterLab notebook named name for user, served under
// /notebook/<namespace>/<name>/ (as Cube Studio does) unless BaseURL says
// otherwise. Its token comes from the Secret named with Credential.
func Jupyter(name, user string) *Notebook { return newNotebook(IDEJupyter, name, user) }

// VSCode returns a VS Code (code-server) workspace named name for user. Its
// password comes from the Secret named with Credential.
func VSCode(name, user string) *Notebook { return newNotebook(IDEVSCode, name, user) }

// RStudio returns an RStudio Server workspace named name for user. Its
// password comes from the Secret named with Credential; the login name is
// "rstudio", the image's user.
func RStudio(name, user string) *Notebook { return newNotebook(IDERStudio, name, user) }

func newNotebook(ide IDE, name, user string) *Notebook {
	n := &Notebook{ide: ide, user: user, storageSize: DefaultStorage}
	podspec.Of(&n.Handle).Init(n, Kind, name)
	return n
}

// BaseURL sets the path Jupyter serves under, e.g. "/notebook/team-a/alice/":
// absolute, ending in "/". Only Jupyter takes a base URL; put code-server and
// RStudio behind a proxy that strips its prefix.
func (n *Notebook) BaseURL(path string) *Notebook {
	if n == nil {
		return nil
	}
	n.baseURL, n.baseURLSet = path, true
	return n
}

// Credential names the Secret and key holding the notebook's credential: the
// token for Jupyter (JUPYTER_TOKEN), the password for code-server and RStudio
// (PASSWORD). The value reaches the container through secretKeyRef and never
// appears in the rendered objects. It is required.
func (n *Notebook) Credential(ref pod.SecretKeyRef) *Notebook {
	if n == nil {
		return nil
	}
	n.secretName, n.secretKey, n.secretSet = ref.Name, ref.Key, true
	return n
}

// Storage sets the size ("50Gi") and storage class of the home volume; an
// empty class uses the cluster's default. Default DefaultStorage.
func (n *Notebook) Storage(size, storageClass string) *Notebook {
	if n == nil {
		return nil
	}
	n.storageSize, n.storageClass = size, storageClass
	return n
}

// HomeDir moves the home volume's mount point (default /home/jovyan,
// /home/coder or /home/rstudio, the images' homes). Jupyter and code-server
// open it as their working directory.
func (n *Notebook) HomeDir(path string) *Notebook {
	if n == nil {
		return nil
	}
	n.homeDir = path
	return n
}

// ServerPort replaces the port the server listens on (default 8888 for
// Jupyter, 8080 for code-server, 8787 for RStudio).
func (n *Notebook) ServerPort(port int32) *Notebook {
	if n == nil {
		return nil
	}
	n.port = port
	return n
}

// MaxLifetime stops the notebook (through Cull) once d has passed since its
// creation or last Renew, as Cube Studio expires notebooks. Zero, the
// default, means no expiry. A lifetime under a minute is refused: it is
// shorter than any culling round, and MaxLifetime(8) (eight nanoseconds, a
// count without its unit) would stop the notebook at the first.
func (n *Notebook) MaxLifetime(d time.Duration) *Notebook {
	if n == nil {
		return nil
	}
	switch {
	case d < 0:
		n.problems = append(n.problems, field.Invalid(field.NewPath("maxLifetime"), d.String(), "must not be negative"))
	case d > 0 && d < time.Minute:
		n.problems = append(n.problems, field.Invalid(field.NewPath("maxLifetime"), d.String(), "must be zero (no expiry) or at least a minute; a count without its unit is nanoseconds"))
	}
	n.maxLifetime = d
	return n
}

// AllowNamespace admits traffic to the UI from every pod of the namespaces
// whose labels match, e.g. {"kubernetes.io/metadata.name": "istio-system"}.
// The labels must not be empty: that would admit every namespace.
func (n *Notebook) AllowNamespace(namespaceLabels map[string]string) *Notebook {
	if n == nil {
		return nil
	}
	n.allow = append(n.allow, networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: cloneOrEmpty(namespaceLabels)},
	})
	return n
}

// AllowPods admits traffic to the UI from the pods whose labels match
// podLabels in the namespaces whose labels match namespaceLabels — an
// ingress controller, a gateway, the culler. Nil namespaceLabels means the
// notebook's own namespace; empty podLabels means every pod there.
func (n *Notebook) AllowPods(namespaceLabels, podLabels map[string]string) *Notebook {
	if n == nil {
		return nil
	}
	peer := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: maps.Clone(podLabels)}}
	if namespaceLabels != nil {
		peer.NamespaceSelector = &metav1.LabelSelector{MatchLabels: maps.Clone(namespaceLabels)}
	}
	n.allow = append(n.allow, peer)
	return n
}

func cloneOrEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return maps.Clone(m)
}

// server is what differs between the three IDEs.
type server struct {
	port           int32
	home           string
	image          string
	uid, gid       int64
	healthPath     string // below the base URL for Jupyter
	credentialEnv  string
	extraEnv       map[string]string
	scratch        []scratchDir // emptyDirs the server writes to
	takesBaseURL   bool
	defaultBaseURL func(namespace, name string) string
}

type scratchDir struct{ volume, path string }

var servers = map[IDE]server{
	IDEJupyter: {
		port: 8888, home: "/home/jovyan", image: DefaultJupyterImage,
		uid: 1000, gid: 100,
		healthPath: "api", credentialEnv: "JUPYTER_TOKEN",
		takesBaseURL: true,
		defaultBaseURL: func(namespace, name string) string {
			return "/notebook/" + namespace + "/" + name + "/"
		},
	},
	IDEVSCode: {
		port: 8080, home: "/home/coder", image: DefaultVSCodeImage,
		uid: 1000, gid: 1000,
		healthPath: "/healthz", credentialEnv: "PASSWORD",
	},
	IDERStudio: {
		port: 8787, home: "/home/rstudio", image: DefaultRStudioImage,
		uid: 1000, gid: 1000,
		healthPath: "/", credentialEnv: "PASSWORD",
		// Rocker's pam-helper accepts the login USER with password PASSWORD.
		extraEnv: map[string]string{"USER": "rstudio"},
		// rserver, run directly as a non-root user (Rocker's documented
		// single-user mode), needs these writable.
		scratch: []scratchDir{
			{"rstudio-run", "/run"},
			{"rstudio-lib", "/var/lib/rstudio-server"},
			{"tmp", "/tmp"},
		},
	},
}
