package hardware

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Inventory is a cluster's accelerators, node by node.
type Inventory struct {
	Nodes []NodeInventory
}

// NodeInventory is what one node offers.
type NodeInventory struct {
	Name string
	// Arch is the node's architecture (kubernetes.io/arch or its node info).
	Arch string
	// Profile is the catalogue profile the node's labels match: a GPU or NPU
	// profile, or CPU/CPUArm64 for nodes without accelerators. Zero when the
	// node has accelerators no profile describes.
	Profile Profile
	// Product is the raw product label (nvidia.com/gpu.product or
	// node.kubernetes.io/npu.chip.name), kept when no profile matched.
	Product string
	// Devices is the number of physical devices: GPU Feature Discovery's
	// nvidia.com/gpu.count when present, else the allocatable whole-device
	// resource.
	Accelerators int
	// MIG counts MIG devices per profile from nvidia.com/mig-<profile>.count
	// labels (mixed strategy).
	MIG map[string]int
	// Allocatable holds the node's accelerator and RDMA extended resources
	// (nvidia.com/*, huawei.com/*, rdma/*, volcano.sh/*).
	Allocatable map[corev1.ResourceName]int64
	// Labels are the node's labels.
	Labels map[string]string
	// Unschedulable mirrors spec.unschedulable (cordoned nodes).
	Unschedulable bool
}

// extendedPrefixes are the resource-name prefixes an inventory keeps.
var extendedPrefixes = []string{"nvidia.com/", "huawei.com/", "rdma/", "volcano.sh/",
	"hygon.com/", "cambricon.com/", "kunlunxin.com/", "metax-tech.com/", "mthreads.com/", "enflame.com/",
	"iluvatar.com/", "iluvatar.ai/"}

// InventoryFromNodes reads nodes into an Inventory, matching each against
// profiles (the Catalogue when none are given). Nodes keep their order.
// Package hardware/nodes lists the nodes of a cluster through a
// controller-runtime client and calls it; hardware itself reads no cluster,
// so importing it pulls in no client.
func InventoryFromNodes(nodes []corev1.Node, profiles ...Profile) Inventory {
	if len(profiles) == 0 {
		profiles = Catalogue()
	}
	inv := Inventory{Nodes: make([]NodeInventory, 0, len(nodes))}
	for i := range nodes {
		inv.Nodes = append(inv.Nodes, readNode(&nodes[i], profiles))
	}
	return inv
}

func readNode(n *corev1.Node, profiles []Profile) NodeInventory {
	ni := NodeInventory{
		Name:          n.Name,
		Labels:        maps.Clone(n.Labels),
		Unschedulable: n.Spec.Unschedulable,
		Allocatable:   map[corev1.ResourceName]int64{},
	}
	ni.Arch = n.Labels[LabelArch]
	if ni.Arch == "" {
		ni.Arch = n.Status.NodeInfo.Architecture
	}
	for name, q := range n.Status.Allocatable {
		for _, prefix := range extendedPrefixes {
			if strings.HasPrefix(string(name), prefix) {
				ni.Allocatable[name] = q.Value()
			}
		}
	}
	for k, v := range n.Labels {
		if rest, ok := strings.CutPrefix(k, "nvidia.com/mig-"); ok {
			if prof, ok := strings.CutSuffix(rest, ".count"); ok {
				if c, err := strconv.Atoi(v); err == nil && c > 0 {
					if ni.MIG == nil {
						ni.MIG = map[string]int{}
					}
					ni.MIG[prof] = c
				}
			}
		}
	}
	switch {
	case n.Labels[LabelGPUProduct] != "":
		ni.Product = n.Labels[LabelGPUProduct]
		if p, ok := matchGPU(ni.Product, n.Labels[LabelGPUMemory], profiles); ok {
			ni.Profile = p
		}
		ni.Accelerators = int(ni.Allocatable[ResourceNVIDIAGPU])
		if c, err := strconv.Atoi(n.Labels[LabelGPUCount]); err == nil && c >= 0 && n.Labels[LabelMIGStrategy] != "single" {
			ni.Accelerators = c
		}
	case n.Labels[LabelNPUChipName] != "" || strings.HasPrefix(n.Labels[LabelAccelerator], "huawei-"):
		ni.Product = n.Labels[LabelNPUChipName]
		for _, p := range profiles {
			if p.Vendor == Huawei && p.Product == ni.Product {
				ni.Profile = p.clone()
				break
			}
		}
		for _, name := range []corev1.ResourceName{ResourceAscend910, ResourceAscend310P, ni.Profile.ResourceName} {
			if v := int(ni.Allocatable[name]); v > ni.Accelerators {
				ni.Accelerators = v
			}
		}
		if ni.Profile.HAMiType != "" {
			if v := int(ni.Allocatable[corev1.ResourceName("huawei.com/"+ni.Profile.HAMiType)]); v > ni.Accelerators {
				ni.Accelerators = v
			}
		}
	case readDomestic(&ni, n.Labels, profiles):
	case ni.Allocatable[ResourceNVIDIAGPU] > 0:
		ni.Accelerators = int(ni.Allocatable[ResourceNVIDIAGPU])
	default:
		labels := maps.Clone(n.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		if labels[LabelArch] == "" {
			labels[LabelArch] = ni.Arch
		}
		for _, p := range profiles {
			if !p.Accelerated() && p.Arch == ni.Arch && labelsMatch(p.nodeLabels, labels) {
				if ni.Profile.IsZero() || len(p.nodeLabels) > len(ni.Profile.nodeLabels) {
					ni.Profile = p.clone()
				}
			}
		}
	}
	return ni
}

// readDomestic recognises a node of the other vendors: by the accelerator
// label a profile selects ("hygon-K100_AI"), else by the vendor's device
// plugin or HAMi resources, matched to the one catalogue profile of that
// vendor when there is just one. Devices is the vendor plugin's
// whole-device resource, else HAMi's count.
func readDomestic(ni *NodeInventory, labels map[string]string, profiles []Profile) bool {
	var vendor Vendor
	if accel := labels[LabelAccelerator]; accel != "" {
		for _, p := range profiles {
			if p.Accelerated() && p.Vendor != NVIDIA && p.Vendor != Huawei && p.nodeLabels[LabelAccelerator] == accel {
				ni.Profile, ni.Product, vendor = p.clone(), p.Product, p.Vendor
				break
			}
		}
	}
	if vendor == "" {
		for _, v := range domesticVendors {
			for name := range ni.Allocatable {
				for _, prefix := range vendorPrefixes(v) {
					if strings.HasPrefix(string(name), prefix) && ni.Allocatable[name] > 0 {
						vendor = v
					}
				}
			}
			if vendor != "" {
				break
			}
		}
		if vendor == "" {
			return false
		}
		var match []Profile
		for _, p := range profiles {
			if p.Vendor == vendor {
				match = append(match, p)
			}
		}
		if len(match) == 1 {
			ni.Profile, ni.Product = match[0].clone(), match[0].Product
		}
	}
	names := []corev1.ResourceName{ni.Profile.pluginResource, ni.Profile.hamiResource}
	if ni.Profile.IsZero() {
		for _, p := range profiles {
			if p.Vendor == vendor {
				names = append(names, p.pluginResource, p.hamiResource)
			}
		}
	}
	// The vendor plugin counts physical devices; HAMi's count may be
	// multiplied by its split count, so it is only a fallback.
	for _, name := range names {
		if v := int(ni.Allocatable[name]); name != "" && v > 0 {
			ni.Accelerators = v
			break
		}
	}
	return true
}

// matchGPU finds the profile for a GPU Feature Discovery product label:
// exact product first, then by model token and memory.
func matchGPU(product, memoryMiB string, profiles []Profile) (Profile, bool) {
	base := product
	if i := strings.Index(base, "-MIG-"); i >= 0 {
		base = base[:i]
	}
	base = strings.TrimSuffix(base, "-SHARED")
	for _, p := range profiles {
		if p.Vendor == NVIDIA && p.Product == base {
			return p.clone(), true
		}
	}
	tokens := strings.FieldsFunc(strings.ToUpper(base), func(r rune) bool { return r == '-' || r == ' ' || r == '_' })
	var candidates []Profile
	for _, p := range profiles {
		if p.Vendor == NVIDIA && p.HAMiType != "" && slices.Contains(tokens, strings.ToUpper(p.HAMiType)) {
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 0 {
		return Profile{}, false
	}
	memMiB, _ := strconv.ParseInt(memoryMiB, 10, 64)
	best := candidates[0]
	bestScore := int64(-1)
	for _, p := range candidates {
		gb := strconv.FormatInt(p.MemoryBytes/gib, 10) + "GB"
		var score int64
		switch {
		case slices.Contains(tokens, gb):
			score = 0
		case memMiB > 0:
			score = abs(p.MemoryBytes>>20 - memMiB)
		default:
			score = 1 << 40
		}
		if bestScore < 0 || score < bestScore {
			best, bestScore = p, score
		}
	}
	return best.clone(), true
}

func labelsMatch(want, have map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// Add appends a node of n devices of profile p, for plans and tests
// without a cluster.
func (inv *Inventory) Add(node string, p Profile, n int) *Inventory {
	inv.Nodes = append(inv.Nodes, NodeInventory{
		Name: node, Arch: p.Arch, Profile: p.clone(), Product: p.Product, Accelerators: n,
		Labels: maps.Clone(p.nodeLabels),
	})
	return inv
}

// Devices counts schedulable devices per profile name.
func (inv Inventory) Accelerators() map[string]int {
	out := map[string]int{}
	for _, n := range inv.Nodes {
		if n.Profile.Accelerated() && !n.Unschedulable && n.Accelerators > 0 {
			out[n.Profile.Name] += n.Accelerators
		}
	}
	return out
}
