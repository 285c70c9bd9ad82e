// Package testenv runs a real kube-apiserver backed by its own etcd for the
// module's tests, with the CRDs of every engine cube targets installed:
// training-operator (PyTorchJob, TFJob, MPIJob, PaddleJob, XGBoostJob,
// MXJob), Katib (Experiment, Trial, Suggestion), Argo Workflows (the full
// CRDs: Workflow, CronWorkflow, WorkflowTemplate, ...), LeaderWorkerSet,
// KubeRay (RayJob, RayCluster, RayService), Volcano (batch Job and CronJob,
// scheduling Queue and PodGroup) and Gateway API (standard channel).
// Objects are checked against the real schemas: CreateStrict and
// ApplyStrict turn a field the server does not know into an error.
//
// # Use
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		env := testenv.Get(t)   // shared by the test binary, started once
//		ns := env.Namespace(t) // fresh, deleted when t ends
//		job := ... // a typed object in ns
//		require.NoError(t, env.CreateStrict(t.Context(), job))
//	}
//
// Get fails the test (it never skips) when the environment cannot start;
// the error carries the last lines of the failing process's log. Main stops
// the processes and deletes their temporary directory after the tests; the
// processes also die with the test binary (Pdeathsig), however it ends.
//
// # What runs and what does not
//
// Only etcd and kube-apiserver run. No controller-manager, scheduler or
// kubelet, so:
//
//   - No default service account is created, and the ServiceAccount
//     admission plugin is disabled so that pods can be created at all.
//   - PodSecurity admission is on (privileged by default; a namespace's
//     pod-security.kubernetes.io/enforce label applies as in a cluster).
//   - ResourceQuota admission is on, but only the quota controller would
//     fill a quota's status. Admission enforces a quota only once its
//     status.hard is set, so a test writes status.hard (and status.used)
//     through the status subresource, as the controller would.
//   - Nothing schedules pods, runs workloads, garbage-collects dependents
//     or updates the status of custom resources. Lifecycle tests drive
//     status themselves through the status subresource.
//   - No namespace controller: Namespace's cleanup deletes the namespace,
//     deletes every namespaced object in it, and removes the namespace's
//     finalizer so that it is really gone. Objects held by finalizers of
//     their own stay behind in etcd; cluster-scoped objects (a Volcano
//     Queue, say) are the test's to delete.
//
// The admin credential in Env.Config is a bearer token of a user in
// system:masters; authorization is RBAC.
//
// # Faults
//
// StopAPIServer kills kube-apiserver (SIGKILL) and keeps etcd, so what was
// stored survives; StartAPIServer starts it again with the same flags on
// the same port and credentials, so e.Config and its clients work again
// (StopAPIServerFor also restarts it when the test ends). Only the
// environment of Get can be stopped, not the test cluster.
//
// Proxy puts a reverse proxy in front of kube-apiserver, with a
// rest.Config of its own, that injects Faults into the requests they
// match: an answer with 429 (with or without Retry-After), 500 or 503, or
// any status; the same after the server did the work (Forward: a lost
// answer); a dropped connection; a watch ended with an ERROR event 410
// "too old resource version"; or a hook that runs before the request goes
// on (stop the server on the fourth Deployment, write behind the client's
// back). A Fault acts on Times requests after skipping Skip; the proxy
// logs every request and which fault answered it, for counting retries.
//
//	p := env.Proxy(t)
//	p.Inject(&testenv.Fault{Match: testenv.Patches("deployments"), Times: 2,
//		Status: http.StatusTooManyRequests, RetryAfter: time.Second})
//	c, _ := cube.New(p.Config)
//
// # Build and cache
//
// Nothing is downloaded but Go modules. kube-apiserver is built from
// k8s.io/kubernetes and etcd from go.etcd.io/etcd/server/v3 in the nested
// module ./tools, whose go.mod pins the versions (Kubernetes v1.37.2 with
// its staging modules replaced by the published k8s.io/* v0.37.2, etcd
// v3.7.0). The CRD manifests are copied out of the Go modules of each
// project at the versions the main module uses (go mod download); Volcano
// ships none, so they are generated from volcano.sh/apis by controller-gen
// v0.23.0, which is installed the same way.
//
// When cube is a dependency in the module cache (an adopter's tests through
// cubetest/envtest), tools/ is not there: a module zip leaves out every
// directory with a go.mod of its own. The build then writes the copy in
// toolsmod/ (go.mod, go.sum and etcd's main, embedded in this package and
// kept equal to tools/ by TestToolsSnapshot) into the cache as
// tools-<hash>/ and builds from it; the cache key is the same, so a cache
// built in cube serves the adopter too.
//
// Everything goes into a cache outside the repository:
//
//	$(os.UserCacheDir)/cube-testenv/kubernetes-<v>-etcd-<v>-<hash>/
//	    bin/kube-apiserver, bin/etcd, bin/controller-gen
//	    crds/<project>/*.yaml, crds/index.json
//	    etcd-template/
//
// os.UserCacheDir is $XDG_CACHE_HOME or ~/.cache on Linux. The hash covers
// tools/go.sum, the CRD sources, the Volcano and controller-gen versions
// and the cache layout, so changing any of them builds a new directory
// beside the old one. A file lock (flock on <dir>.lock) makes parallel test
// binaries (go test ./... runs packages in parallel) wait for one build
// instead of building twice; every artifact is written under a temporary
// name and renamed into place, so a killed build leaves nothing half-made.
//
// Main builds what the cache lacks before it runs the tests, and prints one
// line to stderr when a build starts. On a machine's first run the build
// takes 8 to 10 minutes on two idle cores, most of it compiling
// kube-apiserver, and 20 minutes or more on a busy machine with an empty Go
// build cache. The tests' own -timeout alarm starts after it, but the go
// command kills a test binary that runs longer than -timeout plus one
// minute in all (a binary waiting on the lock included), so build ahead
// with
//
//	go run ./internal/testsupport/testenv/cmd/prebuild
//
// or give the first go test run -timeout 45m.
//
// # The etcd template
//
// Creating the ~40 CRDs, several of them megabytes of schema (Argo's full
// CRDs, KubeRay, training-operator), costs the API server about a minute of
// CPU and most of a gigabyte of memory churn, far more than starting it. So
// the build installs them once into a fresh etcd (create, then wait until
// each is Established and served), compacts it, and keeps that etcd's data
// as etcd-template. Each start copies the template, starts etcd on it as a
// new one-member cluster and kube-apiserver on top, and then waits until
// every CRD's served versions are in discovery (the API server publishes a
// CRD there only once it is Established). A warm start takes a few seconds
// of wall time on idle cores and about 10 CPU-seconds of kube-apiserver
// (half a minute or more of wall time while the machine is busy compiling);
// the two processes take about 1 GiB of memory, kube-apiserver most of it.
//
// # The test cluster
//
// GetCluster gives a second tier on the same binaries: a real one-node
// cluster. Beside etcd and kube-apiserver it runs kube-controller-manager,
// kube-scheduler, a kubelet on containerd and runc with a bridge CNI,
// kube-proxy (iptables), CoreDNS v1.12.1, a host-path volume provisioner
// behind the default StorageClass "standard", and the operators as host
// processes with the cluster's credentials: training-operator v1.8.1 (with
// its validating webhook), LeaderWorkerSet v0.8.0 (with its webhooks, which
// set the LWS_* environment of group pods), Argo's workflow-controller
// v3.7.6 (argoexec in an image), KubeRay v1.5.0 and Katib v0.19.0 (see
// below). Pods are scheduled, get
// an address on the bridge, resolve Services and pods through cluster DNS,
// reach Services through kube-proxy and the API server through the
// kubernetes Service.
//
//	func TestJourney(t *testing.T) {
//		c := testenv.GetCluster(t)  // *Cluster embeds *Env
//		ns := c.Namespace(t)        // deleted by the namespace controller
//		... pods use c.Images.Python, c.Images.Busybox, c.Images.Standin
//	}
//
// Nothing is pulled: the images are built on the machine (see Images) as
// OCI archives and imported into the node's containerd, whose root is kept
// in the cache so that the import happens once per machine. Pods name them
// with imagePullPolicy IfNotPresent (the tag is a content hash).
//
// The network is the bridge cube0 with 10.244.0.0/24 and no masquerade;
// pods get a route to the pod bridge and to the Service VIPs (10.0.0.0/24)
// and no default route, and this host routes the Service VIPs to the
// bridge as well, so nothing a test starts leaves the machine. The
// bridge's gateway 10.244.0.1 is also where kube-apiserver (which
// advertises it, so the kubernetes Service has endpoints), the kubelet (the
// Node's InternalIP), CoreDNS (the kubelet's clusterDNS) and the operators'
// webhooks listen. Tests on this host reach a Service at its cluster IP
// through kube-proxy's rules, a moment after its pods are ready.
//
// The node poses as a node with NVIDIA T4s: it carries the label
// nvidia.com/gpu.product=Tesla-T4 and advertises GPUs (4) nvidia.com/gpu as a
// node-level extended resource, with no device plugin or device behind
// them, so that hardware.T4 placements schedule and quotas count them;
// nothing in a pod can use one. Any other accelerator request stays
// unschedulable.
//
// Beside them, a DRA driver (package dradriver, run by the daemon)
// publishes under NVIDIA's driver name gpu.nvidia.com four Tesla T4s and
// an A100-SXM4-80GB partitionable into MIG devices by shared counters, and
// creates NVIDIA's device classes, so that the real scheduler allocates
// the ResourceClaims of hardware.NVIDIADRA placements. The node's
// containerd (1.6) has no CDI: the allocation shows in the claims' status,
// not in the containers.
//
// One cluster serves every test binary of a run: the first GetCluster
// starts a daemon (this test binary started again, in a session of its
// own) and every binary that uses it holds a shared lock on
// $TMPDIR/cube-testcluster/users.lock. The daemon stops the cluster, and
// removes what the node left on the machine (containers, mounts, network
// namespaces, the bridge, the KUBE-* iptables chains), once nobody has
// held the lock for two minutes (CUBE_TESTCLUSTER_LINGER), so that the
// packages of one go test ./... share it. Component logs are in
// $TMPDIR/cube-testcluster/run/logs while it runs.
//
// The node needs Linux, root, cgroups and the Debian packages containerd,
// runc, containernetworking-plugins, iptables, iproute2, busybox-static,
// postgresql-15 and mmdebstrap (the Python image is a Debian bookworm root filesystem
// with python3-torch, Open MPI, mpi4py and the Jupyter server). Where one
// is missing GetCluster skips, naming it, except under CI=true, where it
// fails. Its binaries are cached under $(os.UserCacheDir)/cube-testcluster
// keyed by the tools modules' go.sum files, and its images by their
// recipes; cmd/prebuild builds both, two modules' tools (or the Python
// image) at a time, beside the test API server's build (only the node's
// programs wait for kube-apiserver, whose packages they share). On this
// project's 2-core machines a cold build of the API server, the node, the
// operators and the images takes 50 to 60 minutes (the compiler keeps
// both cores busy, so building side by side gains little there; it does
// on more cores), and says how long each program and image took; a warm
// start of the cluster takes under a minute.
//
// Katib v0.19.0 runs as its controller (with its webhooks and cert
// generator; it injects the metrics collector into trial pods in
// namespaces labelled katib.kubeflow.org/metrics-collector-injection=
// enabled) and its db-manager, both on the host, the db-manager on a
// PostgreSQL 15 (Debian postgresql-15) that runs as the postgres user on
// loopback in $TMPDIR/cube-testcluster-postgres. The controller runs in a
// mount namespace of its own whose /etc/resolv.conf names CoreDNS: it dials
// suggestion services and the db-manager by their cluster DNS names. Its
// KatibConfig names the local goptuna suggestion image for random, tpe,
// cmaes and sobol and the local file metrics collector for StdOut and File
// collectors; Katib's Python suggestion services and its early-stopping
// service are not built, so Experiments with other algorithms or
// medianstop do not run here.
//
// Faults: once the cluster is up the daemon supervises every component it
// started, as systemd does a kubelet and a Deployment an operator: one that
// exits is started again with the same command line. Cluster.Restart(ctx,
// "training-operator") kills a component's process group with SIGKILL and
// returns once its successor runs, so a test can crash the kubelet, the
// scheduler or an operator in the middle of a workload.
//
// What does not run: no real GPUs or NPUs (device plugins), no Volcano
// scheduler (volcano.sh/volcano cannot be fetched), no NetworkPolicy
// enforcement (the bridge CNI has none; kube-network-policies v0.8.0 was
// tried and cannot program its rules here, because this kernel has no
// nftables queue expression: nft refuses "queue num N" with "No such file
// or directory", and kube-router, the iptables-based alternative, is
// served only at a version with reported security flaws), and no inference engine (the
// stand-in engine answers on the OpenAI API instead). The
// training-operator's PyTorch init container runs Images.PyTorchInit, whose
// nslookup behaves as the one of the operator's default image (alpine:3.10)
// does: Debian's busybox 1.35 nslookup exits 1 under a pod's search domains
// even when the name resolves.
//
// # Reset
//
// Delete the cache directory (rm -rf ~/.cache/cube-testenv) and the next
// test run builds everything again; the Go build cache makes that rebuild
// much faster than the first one. If a start reports that CRDs are missing
// from discovery, the template is suspect: delete the directory named in
// the error.
package testenv
