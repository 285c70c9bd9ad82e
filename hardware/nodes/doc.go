// Package nodes reads a cluster's accelerators: Read lists the Nodes
// through a controller-runtime client and matches each to a catalogue
// profile with hardware.InventoryFromNodes.
//
// It is apart from package hardware so that the profiles, placements and
// plans, which read no cluster, do not pull in a Kubernetes client:
//
//	inv, err := nodes.Read(ctx, c, client.MatchingLabels{"pool": "train"})
//	if err != nil {
//		return err
//	}
//	fmt.Println(inv.Accelerators()["H100-SXM-80GB"])
package nodes
