package nodes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/hardware"
)

// Read lists the cluster's Nodes through c and reads them into an
// Inventory matched against the catalogue (hardware.InventoryFromNodes).
// opts narrow the list (client.MatchingLabels…).
func Read(ctx context.Context, c client.Reader, opts ...client.ListOption) (hardware.Inventory, error) {
	var list corev1.NodeList
	if err := c.List(ctx, &list, opts...); err != nil {
		return hardware.Inventory{}, fmt.Errorf("list nodes: %w", err)
	}
	return hardware.InventoryFromNodes(list.Items), nil
}

// ReadResourceSlices lists the cluster's ResourceSlices through c and reads
// the GPUs its DRA drivers publish into an Inventory matched against the
// catalogue (hardware.InventoryFromResourceSlices), for the planner to
// pack over the devices that exist rather than over node labels.
func ReadResourceSlices(ctx context.Context, c client.Reader, opts ...client.ListOption) (hardware.Inventory, error) {
	var list resourcev1.ResourceSliceList
	if err := c.List(ctx, &list, opts...); err != nil {
		return hardware.Inventory{}, fmt.Errorf("list resource slices: %w", err)
	}
	return hardware.InventoryFromResourceSlices(list.Items), nil
}
