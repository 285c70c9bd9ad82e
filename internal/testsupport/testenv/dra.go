package testenv

import (
	"path/filepath"

	"github.com/cubestudio/cube/internal/testsupport/dradriver"
)

// startDRADriver runs the node's DRA driver (package dradriver) in the
// daemon, as the volume provisioner runs: it registers with the kubelet
// under the kubelet's --root-dir and publishes the node's fake devices as
// ResourceSlices, beside the extended-resource GPUs of advertiseGPUs. The
// scheduler allocates them to ResourceClaims; see dradriver for what a
// container can see of them on this node's containerd (nothing: 1.6 has no
// CDI).
func (n *node) startDRADriver() error {
	d, err := dradriver.Start(n.ctx, n.client, nodeName, filepath.Join(n.dir, "kubelet"))
	if err != nil {
		return err
	}
	n.wg.Go(func() {
		<-n.ctx.Done()
		d.Stop()
	})
	return nil
}
