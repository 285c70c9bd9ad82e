package hardware

import (
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// FabricKind names the network a collective library uses between pods.
type FabricKind string

// Fabric kinds. The zero Fabric has kind FabricNone.
const (
	FabricNone       FabricKind = ""
	FabricTCP        FabricKind = "tcp"
	FabricInfiniBand FabricKind = "infiniband"
	FabricRoCE       FabricKind = "roce"
)

// Defaults a Fabric starts from.
const (
	// DefaultNCCLDebug is the NCCL_DEBUG level set unless NCCLDebug says
	// otherwise: warnings only, as NCCL advises for production.
	DefaultNCCLDebug = "WARN"
	// DefaultHCCLConnectTimeout is HCCL_CONNECT_TIMEOUT: gang members of a
	// Kubernetes job can start minutes apart, so the CANN default of 120 s
	// is raised.
	DefaultHCCLConnectTimeout = 600 * time.Second
	// LegacyRoCEGIDIndex is NCCL_IB_GID_INDEX for NCCL before 2.21.5, which
	// did not pick the RoCE v2 GID itself.
	LegacyRoCEGIDIndex = 3
)

// NCCL GPUDirect levels accepted by GDRLevel.
var gdrLevels = []string{"LOC", "PIX", "PXB", "PHB", "SYS", "NVL", "C2C", "P2C"}

// NCCL debug levels accepted by NCCLDebug.
var ncclDebugLevels = []string{"VERSION", "WARN", "INFO", "ABORT", "TRACE"}

// Fabric is the network the collective library uses between pods. The zero
// value means no fabric: nothing is added for networking. Build one with
// InfiniBand, RoCE or TCP and FabricOptions; options never fail, Apply
// reports their problems.
type Fabric struct {
	kind           FabricKind
	rdmaResource   corev1.ResourceName
	rdmaCount      int64
	sriov          bool
	networks       []string
	hcas           []string
	socketIfname   string
	gdrLevel       string
	gidIndex       *int
	ncclDebug      string
	connectTimeout time.Duration
	buffSizeMB     int
	// ncclOptions records which NCCL-only options were given, for the
	// Ascend check.
	ncclOptions []string
	// hcclOptions records which HCCL-only options were given, for the
	// NVIDIA check.
	hcclOptions []string
	// rdmaOptions records options that ask for an RDMA device plugin or
	// Multus, which 910B fabrics do not use.
	rdmaOptions []string
	problems    []fabricProblem
}

type fabricProblem struct {
	field  string
	value  any
	detail string
}

// FabricOption configures a Fabric.
type FabricOption func(*Fabric)

// InfiniBand is an InfiniBand fabric: the RDMA shared-device resource,
// IPC_LOCK, a memory-backed /dev/shm and NCCL variables.
func InfiniBand(opts ...FabricOption) Fabric { return newFabric(FabricInfiniBand, opts) }

// RoCE is a RoCE v2 fabric. On NVIDIA it is InfiniBand's set plus the GID
// choice (NCCL ≥ 2.21.5 picks the RoCE v2 GID itself; LegacyNCCL or
// GIDIndex pins one). On Ascend 910B it is the NPUs' own RoCE ports: only
// HCCL variables are set.
func RoCE(opts ...FabricOption) Fabric { return newFabric(FabricRoCE, opts) }

// TCP is plain sockets: NCCL_IB_DISABLE=1 for NCCL, the socket interface
// for NCCL or HCCL.
func TCP(opts ...FabricOption) Fabric { return newFabric(FabricTCP, opts) }

func newFabric(kind FabricKind, opts []FabricOption) Fabric {
	f := Fabric{kind: kind, rdmaCount: 1}
	if kind == FabricInfiniBand || kind == FabricRoCE {
		f.rdmaResource = DefaultRDMASharedDevice
	}
	for _, o := range opts {
		if o != nil {
			o(&f)
		}
	}
	return f
}

// Kind is the fabric's kind.
func (f Fabric) Kind() FabricKind { return f.kind }

// IsZero reports whether f is no fabric at all.
func (f Fabric) IsZero() bool { return f.kind == FabricNone }

// RDMA reports whether f is InfiniBand or RoCE.
func (f Fabric) RDMA() bool { return f.kind == FabricInfiniBand || f.kind == FabricRoCE }

// RDMAResource is the RDMA device resource requested per pod ("" for none).
func (f Fabric) RDMAResource() corev1.ResourceName { return f.rdmaResource }

// Networks are the Multus networks attached to the pod.
func (f Fabric) Networks() []string { return slices.Clone(f.networks) }

func (f *Fabric) problem(field string, value any, detail string) {
	f.problems = append(f.problems, fabricProblem{field: field, value: value, detail: detail})
}

// RDMASharedDevice names the k8s-rdma-shared-dev-plugin resource (default
// rdma/rdma_shared_device_a).
func RDMASharedDevice(name corev1.ResourceName) FabricOption {
	return func(f *Fabric) {
		f.rdmaResource = name
		f.sriov = false
		f.rdmaOptions = append(f.rdmaOptions, "rdmaSharedDevice")
	}
}

// SRIOV requests an SR-IOV virtual function resource (e.g.
// nvidia.com/mlnxnics, mellanox.com/mlnx_sriov_rdma) instead of the shared
// RDMA device; count VFs per pod (one per rail).
func SRIOV(name corev1.ResourceName, count int) FabricOption {
	return func(f *Fabric) {
		f.rdmaResource = name
		f.sriov = true
		f.rdmaOptions = append(f.rdmaOptions, "sriov")
		if count < 1 {
			f.problem("sriov", count, "must request at least one virtual function")
			return
		}
		f.rdmaCount = int64(count)
	}
}

// Networks attaches Multus networks ("rdma-net" or "namespace/name"),
// appending to those given before.
func Networks(names ...string) FabricOption {
	return func(f *Fabric) {
		for _, n := range names {
			if n == "" {
				f.problem("networks", n, "network name must not be empty")
				continue
			}
			f.networks = append(f.networks, n)
		}
		f.rdmaOptions = append(f.rdmaOptions, "networks")
	}
}

// HCAs sets NCCL_IB_HCA: adapter names, "=mlx5_0:1" exact matches or a
// "^"-prefixed exclusion, as NCCL's grammar allows.
func HCAs(names ...string) FabricOption {
	return func(f *Fabric) {
		f.hcas = append(f.hcas[:0:0], names...)
		f.ncclOptions = append(f.ncclOptions, "hcas")
	}
}

// SocketInterface sets NCCL_SOCKET_IFNAME (NVIDIA) or HCCL_SOCKET_IFNAME
// (Ascend): the bootstrap interface, e.g. "eth0", "=ens1f0" or "^docker".
func SocketInterface(name string) FabricOption {
	return func(f *Fabric) { f.socketIfname = name }
}

// GDRLevel sets NCCL_NET_GDR_LEVEL (LOC, PIX, PXB, PHB, SYS…).
func GDRLevel(level string) FabricOption {
	return func(f *Fabric) {
		f.gdrLevel = level
		f.ncclOptions = append(f.ncclOptions, "gdrLevel")
		if !slices.Contains(gdrLevels, level) {
			f.problem("gdrLevel", level, "must be one of "+join(gdrLevels))
		}
	}
}

// GIDIndex pins NCCL_IB_GID_INDEX. Only needed for NCCL before 2.21.5 or
// unusual GID tables; see LegacyNCCL.
func GIDIndex(index int) FabricOption {
	return func(f *Fabric) {
		f.ncclOptions = append(f.ncclOptions, "gidIndex")
		if index < 0 {
			f.problem("gidIndex", index, "must not be negative")
			return
		}
		f.gidIndex = &index
	}
}

// LegacyNCCL pins NCCL_IB_GID_INDEX to 3, the usual RoCE v2 IPv4 entry, for
// images with NCCL before 2.21.5.
func LegacyNCCL() FabricOption { return GIDIndex(LegacyRoCEGIDIndex) }

// NCCLDebug sets NCCL_DEBUG (default WARN).
func NCCLDebug(level string) FabricOption {
	return func(f *Fabric) {
		f.ncclDebug = level
		f.ncclOptions = append(f.ncclOptions, "ncclDebug")
		if !slices.Contains(ncclDebugLevels, level) {
			f.problem("ncclDebug", level, "must be one of "+join(ncclDebugLevels))
		}
	}
}

// HCCLConnectTimeout sets HCCL_CONNECT_TIMEOUT (CANN accepts 120 s to
// 7200 s; default here DefaultHCCLConnectTimeout).
func HCCLConnectTimeout(d time.Duration) FabricOption {
	return func(f *Fabric) {
		f.hcclOptions = append(f.hcclOptions, "hcclConnectTimeout")
		if d < 120*time.Second || d > 7200*time.Second {
			f.problem("hcclConnectTimeout", d.String(), "must be between 2m0s and 2h0m0s")
			return
		}
		f.connectTimeout = d
	}
}

// HCCLBufferSize sets HCCL_BUFFSIZE in MB (CANN default 200; each
// communicator uses twice this).
func HCCLBufferSize(mb int) FabricOption {
	return func(f *Fabric) {
		f.hcclOptions = append(f.hcclOptions, "hcclBufferSize")
		if mb < 1 {
			f.problem("hcclBufferSize", mb, "must be at least 1 MB")
			return
		}
		f.buffSizeMB = mb
	}
}

// collectiveEnv is f's environment for the collective library c: NCCL's
// variables, or the vendor library's equivalents.
func (f Fabric) collectiveEnv(c Collective) []corev1.EnvVar {
	var env []corev1.EnvVar
	add := func(name, value string) {
		if name != "" {
			env = append(env, corev1.EnvVar{Name: name, Value: value})
		}
	}
	if f.kind == FabricTCP {
		add(c.IBDisable, "1")
	}
	if len(f.hcas) > 0 {
		add(c.IBHCA, join(f.hcas))
	}
	if f.socketIfname != "" {
		add(c.SocketInterface, f.socketIfname)
	}
	if f.gdrLevel != "" {
		add(c.GDRLevel, f.gdrLevel)
	}
	if f.gidIndex != nil {
		add(c.IBGIDIndex, strconv.Itoa(*f.gidIndex))
	}
	debug := f.ncclDebug
	if debug == "" {
		debug = DefaultNCCLDebug
	}
	add(c.Debug, debug)
	return env
}

// collectiveVar is c's variable for the NCCL-only fabric option o.
func collectiveVar(c Collective, option string) string {
	switch option {
	case "hcas":
		return c.IBHCA
	case "gdrLevel":
		return c.GDRLevel
	case "gidIndex":
		return c.IBGIDIndex
	case "ncclDebug":
		return c.Debug
	}
	return ""
}

// ncclVar is NCCL's variable for the fabric option o.
func ncclVar(option string) string { return collectiveVar(ncclNames("NCCL"), option) }

// hcclEnv is the HCCL environment of f.
func (f Fabric) hcclEnv() []corev1.EnvVar {
	env := []corev1.EnvVar{{
		Name:      "HCCL_IF_IP",
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}},
	}}
	if f.socketIfname != "" {
		env = append(env, corev1.EnvVar{Name: "HCCL_SOCKET_IFNAME", Value: f.socketIfname})
	}
	timeout := f.connectTimeout
	if timeout == 0 {
		timeout = DefaultHCCLConnectTimeout
	}
	env = append(env, corev1.EnvVar{Name: "HCCL_CONNECT_TIMEOUT", Value: strconv.Itoa(int(timeout / time.Second))})
	if f.buffSizeMB > 0 {
		env = append(env, corev1.EnvVar{Name: "HCCL_BUFFSIZE", Value: strconv.Itoa(f.buffSizeMB)})
	}
	return env
}

func join(s []string) string { return strings.Join(s, ",") }
