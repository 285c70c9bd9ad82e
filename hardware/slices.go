package hardware

import (
	"strconv"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
)

// InventoryFromResourceSlices reads the devices a cluster's DRA drivers
// publish (resource.k8s.io/v1 ResourceSlices) into an Inventory, matching
// each GPU to profiles (the Catalogue when none are given) by its
// productName attribute (NVML's name, spaces made dashes as GPU Feature
// Discovery spells Product) and its memory capacity. It counts the GPUs of
// NVIDIA's and HAMi's drivers (device type "gpu" or "hami-gpu"); MIG
// devices (type "mig") are partitions of a GPU counted already, which the
// planner places by the profile's MIG geometry. A node with GPUs of two
// products gets one entry per product, in the order they are first met;
// devices published for all nodes or by node selector are listed under
// the node name "". A GPU no profile matches keeps its Product with a zero
// Profile.
func InventoryFromResourceSlices(rs []resourcev1.ResourceSlice, profiles ...Profile) Inventory {
	if len(profiles) == 0 {
		profiles = Catalogue()
	}
	type key struct{ node, product string }
	index := map[key]int{}
	var inv Inventory
	for _, s := range rs {
		node := ""
		if s.Spec.NodeName != nil {
			node = *s.Spec.NodeName
		}
		for _, d := range s.Spec.Devices {
			if t := attribute(d, s.Spec.Driver, AttributeType); t == nil || (*t != "gpu" && *t != "hami-gpu") {
				continue
			}
			product := ""
			if p := attribute(d, s.Spec.Driver, AttributeProductName); p != nil {
				product = strings.ReplaceAll(*p, " ", "-")
			}
			k := key{node, product}
			i, ok := index[k]
			if !ok {
				ni := NodeInventory{Name: node, Product: product}
				memMiB := ""
				if c, ok := d.Capacity[CapacityMemory]; ok {
					memMiB = strconv.FormatInt(c.Value.Value()>>20, 10)
				}
				if p, ok := matchGPU(product, memMiB, profiles); ok {
					ni.Profile = p
				}
				i = len(inv.Nodes)
				index[k] = i
				inv.Nodes = append(inv.Nodes, ni)
			}
			inv.Nodes[i].Accelerators++
		}
	}
	return inv
}

// attribute is the string attribute name of d, qualified by driver or not.
func attribute(d resourcev1.Device, driver, name string) *string {
	for _, k := range []string{driver + "/" + name, name} {
		if a, ok := d.Attributes[resourcev1.QualifiedName(k)]; ok && a.StringValue != nil {
			return a.StringValue
		}
	}
	return nil
}
