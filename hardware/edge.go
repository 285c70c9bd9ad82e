package hardware

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// KubeEdge node labels. KubeEdge marks every node its edgecore registers
// with node-role.kubernetes.io/edge="" (kubeedge/kubeedge
// common/constants/default.go EdgeNodeRoleKey/EdgeNodeRoleValue, and
// cloud/pkg/common/nodes/nodes.go: "only if label
// {node-role.kubernetes.io/edge: ""} exists, it is an edge node") and
// node-role.kubernetes.io/agent="" (its kubelet fork,
// vendor/k8s.io/kubernetes/pkg/kubelet/kubelet_node_status.go).
const (
	LabelEdgeRole  = "node-role.kubernetes.io/edge"
	LabelAgentRole = "node-role.kubernetes.io/agent"
	LabelHostname  = "kubernetes.io/hostname"
)

// Edge places a pod on KubeEdge edge nodes. The zero Edge selects any edge
// node and keeps the pod network.
//
// What it writes, and why:
//
//   - nodeSelector node-role.kubernetes.io/edge="" (every edge node has it),
//     plus NodeLabels, Node (kubernetes.io/hostname) and Arch
//     (kubernetes.io/arch; edge boxes are often arm64) when set.
//   - tolerations: node-role.kubernetes.io/edge with any effect, for
//     clusters that taint their edge nodes (edgecore registers none by
//     default: edged's registerWithTaints is empty), and
//     node.kubernetes.io/unreachable and not-ready NoExecute without a
//     time limit, so that the cloud side does not evict a pod while the
//     edge is offline: edgecore keeps running it (KubeEdge's edge autonomy).
//   - HostNetwork: edge nodes run no kube-proxy and often no CNI; without
//     EdgeMesh a pod reaches and is reached only on the host's network.
//     The DNS policy then is ClusterFirstWithHostNet.
//   - Capacity: the resources one edge device offers; a container asking
//     for more is an error, so images and resources are sized for it.
//
// What KubeEdge needs from the cluster (none of it runs in cube's tests):
// cloudcore running in the cluster, edge nodes joined with keadm join,
// DaemonSets that must not run on edge nodes (kube-proxy, the CNI) kept off
// them with a node-role.kubernetes.io/edge DoesNotExist affinity, as
// KubeEdge's own manifests do (build/admission/deployment.yaml), EdgeMesh
// for Service access between edge and cloud when HostNetwork is off, and
// images for the edge architecture that the edge nodes can pull.
type Edge struct {
	// NodeLabels narrow the edge nodes (a site, a device model).
	NodeLabels map[string]string
	// Node pins one edge node by name.
	Node string
	// Arch is the edge nodes' architecture (ARM64, AMD64); empty is any.
	Arch string
	// HostNetwork runs the pod on the host's network.
	HostNetwork bool
	// Capacity is what one edge device offers (cpu, memory, accelerators).
	Capacity corev1.ResourceList
}

// edgeTolerations are the tolerations every edge pod gets.
var edgeTolerations = []corev1.Toleration{
	{Key: LabelEdgeRole, Operator: corev1.TolerationOpExists},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
}

// ApplyEdge places tmpl on edge nodes as e says (see Edge), checking the
// named container's resources against e.Capacity. It never panics, reports
// every problem under path, and leaves tmpl unchanged on error.
func ApplyEdge(tmpl *corev1.PodTemplateSpec, container string, e Edge, path *field.Path) field.ErrorList {
	if tmpl == nil {
		return field.ErrorList{field.Required(path, "pod template must not be nil")}
	}
	var errs field.ErrorList
	out := tmpl.DeepCopy()
	spec := path.Child("spec")
	sel := maps.Clone(out.Spec.NodeSelector)
	if sel == nil {
		sel = map[string]string{}
	}
	set := func(k, v string) {
		if have, ok := sel[k]; ok && have != v {
			errs = append(errs, field.Invalid(spec.Child("nodeSelector").Key(k), v, fmt.Sprintf("conflicts with %q already selected", have)))
			return
		}
		sel[k] = v
	}
	set(LabelEdgeRole, "")
	for _, k := range slices.Sorted(maps.Keys(e.NodeLabels)) {
		p := path.Child("edge", "nodeLabels").Key(k)
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(p, k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(e.NodeLabels[k]) {
			errs = append(errs, field.Invalid(p, e.NodeLabels[k], msg))
		}
		set(k, e.NodeLabels[k])
	}
	if e.Node != "" {
		for _, msg := range validation.IsDNS1123Subdomain(e.Node) {
			errs = append(errs, field.Invalid(path.Child("edge", "node"), e.Node, msg))
		}
		set(LabelHostname, e.Node)
	}
	if e.Arch != "" {
		if e.Arch != AMD64 && e.Arch != ARM64 {
			errs = append(errs, field.NotSupported(path.Child("edge", "arch"), e.Arch, []string{AMD64, ARM64}))
		}
		set(LabelArch, e.Arch)
	}
	out.Spec.NodeSelector = sel
	for _, t := range edgeTolerations {
		if !slices.ContainsFunc(out.Spec.Tolerations, func(have corev1.Toleration) bool { return have.MatchToleration(&t) }) {
			out.Spec.Tolerations = append(out.Spec.Tolerations, t)
		}
	}
	if e.HostNetwork {
		out.Spec.HostNetwork = true
		out.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	idx := containerIndex(out, container)
	if idx < 0 {
		errs = append(errs, field.NotFound(spec.Child("containers"), container))
	} else if len(e.Capacity) > 0 {
		c := out.Spec.Containers[idx]
		res := spec.Child("containers").Index(idx).Child("resources")
		for _, part := range []struct {
			name string
			list corev1.ResourceList
		}{{"requests", c.Resources.Requests}, {"limits", c.Resources.Limits}} {
			for _, rn := range sortedKeys(part.list) {
				q := part.list[rn]
				capQ, ok := e.Capacity[rn]
				if ok && q.Cmp(capQ) > 0 {
					errs = append(errs, field.Invalid(res.Child(part.name).Key(string(rn)), q.String(),
						fmt.Sprintf("exceeds the edge device's %s", capQ.String())))
				}
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	*tmpl = *out
	return nil
}
