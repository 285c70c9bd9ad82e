package notebook_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/vgpu"
)

var ingress = map[string]string{"kubernetes.io/metadata.name": "istio-system"}

func ExampleJupyter() {
	nb := notebook.Jupyter("alice-lab", "alice").
		Namespace("team-a").
		Credential(pod.SecretKeyRef{Name: "alice-lab-token", Key: "token"}).
		On(hardware.H100).Accelerators(1).
		Storage("50Gi", "fast-ssd").
		MaxLifetime(72 * time.Hour).
		AllowNamespace(ingress)
	objs, err := nb.Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range objs {
		fmt.Println(o.GetObjectKind().GroupVersionKind().Kind, o.GetName())
	}
	c := objs[3].(*appsv1.StatefulSet).Spec.Template.Spec.Containers[0]
	fmt.Println(strings.Join(c.Args, " "))
	fmt.Println("probe:", c.ReadinessProbe.HTTPGet.Path)
	fmt.Println("token from:", c.Env[0].Name, "<-", c.Env[0].ValueFrom.SecretKeyRef.Name, c.Env[0].ValueFrom.SecretKeyRef.Key)
	fmt.Println("gpus:", c.Resources.Limits.Name("nvidia.com/gpu", "DecimalSI"))
	// Output:
	// NetworkPolicy alice-lab
	// Service alice-lab-headless
	// Service alice-lab
	// StatefulSet alice-lab
	// start-notebook.py --ServerApp.ip=0.0.0.0 --ServerApp.port=8888 --ServerApp.base_url=/notebook/team-a/alice-lab/ --ServerApp.root_dir=/home/jovyan
	// probe: /notebook/team-a/alice-lab/api
	// token from: JUPYTER_TOKEN <- alice-lab-token token
	// gpus: 1
}

// A Kubeflow notebook image starts Jupyter from its own s6 service, which
// reads the base URL from NB_PREFIX; an image with Jupyter Server but not the
// Docker Stacks' scripts runs `jupyter server`.
func ExampleNotebook_Launch() {
	for _, l := range []notebook.Launcher{notebook.LaunchKubeflow, notebook.LaunchJupyterServer} {
		sts, err := notebook.Jupyter("alice-lab", "alice").Namespace("team-a").
			Image("kubeflownotebookswg/jupyter-scipy:v1.9.0").Launch(l).
			Credential(pod.SecretKeyRef{Name: "alice-lab-token", Key: "token"}).AllowNamespace(ingress).Build()
		if err != nil {
			fmt.Println(err)
			return
		}
		c := sts.Spec.Template.Spec.Containers[0]
		fmt.Printf("%s: command %q args %q\n", l, c.Command, c.Args)
		fmt.Println("  " + c.Env[1].Name + "=" + c.Env[1].Value)
	}
	// Output:
	// kubeflow: command [] args []
	//   NB_PREFIX=/notebook/team-a/alice-lab
	// jupyter-server: command ["jupyter" "server"] args ["--ServerApp.ip=0.0.0.0" "--ServerApp.port=8888" "--ServerApp.base_url=/notebook/team-a/alice-lab/" "--ServerApp.root_dir=/home/jovyan" "--ServerApp.open_browser=False"]
	//   NB_PREFIX=/notebook/team-a/alice-lab
}

func ExampleVSCode() {
	// Every problem comes back at once, with its field path.
	_, err := notebook.VSCode("bob-code", "bob").
		Slice(vgpu.Slice(hardware.A100_80G).Memory("20Gi").Cores(30)).
		Storage("lots", "").
		Objects()
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		for _, e := range agg.Errors() {
			fmt.Println(e)
		}
	}
	// Output:
	// credential: Required value: name the Secret and key holding the notebook's password with Credential
	// storage.size: Invalid value: "lots": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'
	// networkPolicy.from: Required value: name who may reach the notebook with AllowNamespace or AllowPods (an ingress controller, a gateway, the culler)
}

func ExampleRStudio() {
	sts, err := notebook.RStudio("carol-r", "carol").
		Namespace("team-a").
		Credential(pod.SecretKeyRef{Name: "carol-password", Key: "password"}).
		On(hardware.Ascend910B3).Accelerators(1).
		AllowPods(map[string]string{"kubernetes.io/metadata.name": "ingress-nginx"},
			map[string]string{"app.kubernetes.io/name": "ingress-nginx"}).
		Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	spec := sts.Spec.Template.Spec
	out, _ := yaml.Marshal(map[string]any{
		"command":         spec.Containers[0].Command,
		"args":            spec.Containers[0].Args,
		"securityContext": spec.SecurityContext,
		"mounts":          spec.Containers[0].VolumeMounts,
		"claim":           sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests,
	})
	fmt.Print(string(out))
	// Output:
	// args:
	// - --server-daemonize=0
	// - --www-address=0.0.0.0
	// - --www-port=8787
	// - --server-user=rstudio
	// - --auth-none=0
	// - --auth-pam-helper-path=pam-helper
	// claim:
	//   storage: 10Gi
	// command:
	// - /usr/lib/rstudio-server/bin/rserver
	// mounts:
	// - mountPath: /dev/shm
	//   name: dshm
	// - mountPath: /home/rstudio
	//   name: home
	// - mountPath: /run
	//   name: rstudio-run
	// - mountPath: /var/lib/rstudio-server
	//   name: rstudio-lib
	// - mountPath: /tmp
	//   name: tmp
	// securityContext:
	//   fsGroup: 1000
	//   fsGroupChangePolicy: OnRootMismatch
	//   runAsGroup: 1000
	//   runAsNonRoot: true
	//   runAsUser: 1000
	//   seccompProfile:
	//     type: RuntimeDefault
}

func ExampleCull() {
	ctx := context.Background()
	// A notebook as the API server would hold it, running and ready.
	nb := notebook.Jupyter("alice-lab", "alice").Namespace("team-a").
		Credential(pod.SecretKeyRef{Name: "alice-lab-token", Key: "token"}).AllowNamespace(ingress)
	objs, _ := nb.Objects()
	objs[3].(*appsv1.StatefulSet).Status.ReadyReplicas = 1
	token := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-lab-token", Namespace: "team-a"},
		Data:       map[string][]byte{"token": []byte("s3cret")},
	}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).WithObjects(token).Build()

	// Jupyter Server's GET /api/status, last active at 09:00, and GET
	// /api/kernels: one idle kernel, quiet since 08:30. A busy kernel would
	// keep the notebook running.
	jupyter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "token s3cret" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/api/kernels") {
			fmt.Fprint(w, `[{"id": "0b1c", "name": "python3", "last_activity": "2026-07-01T08:30:00.000000Z", "execution_state": "idle", "connections": 0}]`)
			return
		}
		fmt.Fprint(w, `{"connections": 0, "kernels": 1, "last_activity": "2026-07-01T09:00:00.000000Z", "started": "2026-07-01T08:00:00.000000Z"}`)
	}))
	defer jupyter.Close()

	culled, err := notebook.Cull(ctx, c, "team-a", 2*time.Hour,
		notebook.FindServiceURL(func(*corev1.Service) (string, error) { return jupyter.URL, nil }),
		notebook.Clock(func() time.Time { return time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC) }))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, cu := range culled {
		fmt.Println(cu)
	}
	sts := &appsv1.StatefulSet{}
	_ = c.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: "alice-lab"}, sts)
	fmt.Println("replicas:", *sts.Spec.Replicas)
	// Output:
	// team-a/alice-lab Idle: no activity for 3h0m0s since 2026-07-01T09:00:00Z, longer than the limit of 2h0m0s
	// replicas: 0
}

func ExampleCull_vscode() {
	ctx := context.Background()
	// A VS Code notebook as the API server would hold it, running and ready.
	nb := notebook.VSCode("bob-code", "bob").Namespace("team-a").
		Credential(pod.SecretKeyRef{Name: "bob-code-password", Key: "password"}).AllowNamespace(ingress)
	objs, _ := nb.Objects()
	objs[3].(*appsv1.StatefulSet).Status.ReadyReplicas = 1
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).Build()

	// code-server's GET /healthz, which needs no password: its heart last
	// beat at 09:30 and has been quiet for more than a minute.
	lastBeat := time.Date(2026, 7, 1, 9, 30, 0, 0, time.UTC)
	codeServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"status":"expired","lastHeartbeat":%d}`, lastBeat.UnixMilli())
	}))
	defer codeServer.Close()

	culled, err := notebook.Cull(ctx, c, "team-a", time.Hour,
		notebook.FindServiceURL(func(*corev1.Service) (string, error) { return codeServer.URL, nil }),
		notebook.Clock(func() time.Time { return time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC) }),
		notebook.CullDryRun)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, cu := range culled {
		fmt.Println(cu.IDE, cu.Since.Format(time.Kitchen), cu)
	}
	// Output:
	// vscode 9:30AM team-a/bob-code Idle: no activity for 2h30m0s since 2026-07-01T09:30:00Z, longer than the limit of 1h0m0s
}
