// Package notebook builds per-user development workspaces — JupyterLab,
// VS Code (code-server) and RStudio Server — with GPUs, vGPU slices or NPUs,
// a persistent home directory, and idle and time-based shutdown.
//
// Cube Studio runs a notebook as a bare Pod with a ClusterIP Service and an
// Istio VirtualService under /notebook/<namespace>/<name>/, with
// authentication left to a cookie match at the gateway. This package renders
// instead:
//
//   - a StatefulSet of one pod whose home directory is a volume claim
//     template (home-<name>-0), retained when the notebook is stopped or
//     deleted, so the home follows the pod;
//   - a headless Service governing the StatefulSet and a ClusterIP Service,
//     named like the notebook, that ingress or a gateway routes to;
//   - a NetworkPolicy admitting only the namespaces or pods named with
//     AllowNamespace and AllowPods;
//   - the server's credential (Jupyter's token, code-server's and RStudio's
//     password) from a Secret the caller names, through secretKeyRef;
//   - a non-root security context matching each image's user, startup and
//     readiness probes on the server's health endpoint, and Jupyter served
//     under its base URL, which NB_PREFIX also carries.
//
// Jupyter images start in one of three ways, chosen with Launch: the Jupyter
// Docker Stacks' start-notebook.py (the default, and cube's default image),
// Kubeflow's notebook images, whose s6 service starts JupyterLab itself on
// port 8888 under $NB_PREFIX (and without a token: the NetworkPolicy and a
// proxy guard them), and plain `jupyter server` for any other image with
// Jupyter Server installed.
//
// GPUs, vGPU slices, hardware profiles, /dev/shm, environment and extra
// volumes are set through the embedded pod.Builder, like every cube workload.
//
//	nb := notebook.Jupyter("alice-lab", "alice").
//		Namespace("team-a").
//		Credential(pod.SecretKeyRef{Name: "alice-lab-token", Key: "token"}).
//		On(hardware.H100).Accelerators(1).
//		Storage("50Gi", "fast-ssd").
//		MaxLifetime(72 * time.Hour).
//		AllowNamespace(map[string]string{"kubernetes.io/metadata.name": "istio-system"})
//	rel, err := client.Apply(ctx, nb)
//
// Stop and Start scale the StatefulSet to zero and back with a JSON merge
// patch under their own field manager; the home claim stays. Cull stops any
// notebook past its MaxLifetime since creation or its last Renew, as Cube
// Studio expires notebooks, and notebooks whose server reports no activity
// for longer than a limit: Jupyter through GET <base URL>api/status and
// api/kernels with its token (a busy kernel is activity, as in Kubeflow's
// culler), code-server through its unauthenticated GET /healthz
// (lastHeartbeat). Open-source RStudio Server reports no activity, so
// RStudio notebooks are only expired.
//
//	culled, err := notebook.Cull(ctx, c, "team-a", 2*time.Hour)
//	for _, cu := range culled {
//		log.Printf("%s (%s) since %s", cu, cu.IDE, cu.Since)
//	}
package notebook
