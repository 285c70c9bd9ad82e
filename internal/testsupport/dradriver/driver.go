package dradriver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/cubestudio/cube/hardware"
)

// Driver is the running kubelet plugin.
type Driver struct {
	helper *kubeletplugin.Helper

	mu       sync.Mutex
	prepared map[types.UID][]string // claim → devices
}

// Start creates NVIDIA's device classes (if absent), registers the plugin
// with the kubelet whose --root-dir is kubeletRoot (its plugins_registry
// and plugins/gpu.nvidia.com directories) and publishes Resources(node).
// It returns once the plugin serves; Stop ends it.
func Start(ctx context.Context, client kubernetes.Interface, node, kubeletRoot string) (*Driver, error) {
	for _, c := range DeviceClasses() {
		if _, err := client.ResourceV1().DeviceClasses().Create(ctx, c, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create device class %s: %w", c.Name, err)
		}
	}
	registry := filepath.Join(kubeletRoot, "plugins_registry")
	data := filepath.Join(kubeletRoot, "plugins", hardware.DriverNVIDIAGPU)
	for _, dir := range []string{registry, data} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, err
		}
	}
	d := &Driver{prepared: map[types.UID][]string{}}
	h, err := kubeletplugin.Start(ctx, d,
		kubeletplugin.DriverName(hardware.DriverNVIDIAGPU),
		kubeletplugin.KubeClient(client),
		kubeletplugin.NodeName(node),
		kubeletplugin.RegistrarDirectoryPath(registry),
		kubeletplugin.PluginDataDirectoryPath(data),
	)
	if err != nil {
		return nil, fmt.Errorf("start kubelet plugin %s: %w", hardware.DriverNVIDIAGPU, err)
	}
	d.helper = h
	if err := h.PublishResources(ctx, Resources(node)); err != nil {
		h.Stop()
		return nil, fmt.Errorf("publish resource slices: %w", err)
	}
	return d, nil
}

// Stop ends the plugin; the published ResourceSlices stay until the node
// goes.
func (d *Driver) Stop() {
	if d != nil && d.helper != nil {
		d.helper.Stop()
	}
}

// Prepared returns the devices prepared for each claim, by claim UID.
func (d *Driver) Prepared() map[types.UID][]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[types.UID][]string, len(d.prepared))
	for k, v := range d.prepared {
		out[k] = slices.Clone(v)
	}
	return out
}

// PrepareResourceClaims returns, for each claim, the devices the scheduler
// allocated from this driver with one CDI device ID each
// (k8s.gpu.nvidia.com/device=<claim UID>-<device>, unique per claim as the
// kubeletplugin documentation asks).
func (d *Driver) PrepareResourceClaims(_ context.Context, claims []*resourcev1.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range claims {
		if c.Status.Allocation == nil {
			out[c.UID] = kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s is not allocated", c.Namespace, c.Name)}
			continue
		}
		var res kubeletplugin.PrepareResult
		var names []string
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver != hardware.DriverNVIDIAGPU {
				continue
			}
			res.Devices = append(res.Devices, kubeletplugin.Device{
				Requests:     []string{r.Request},
				PoolName:     r.Pool,
				DeviceName:   r.Device,
				CDIDeviceIDs: []string{fmt.Sprintf("k8s.%s/device=%s-%s", hardware.DriverNVIDIAGPU, c.UID, r.Device)},
			})
			names = append(names, r.Device)
		}
		d.prepared[c.UID] = names
		out[c.UID] = res
	}
	return out, nil
}

// UnprepareResourceClaims forgets the claims.
func (d *Driver) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range claims {
		delete(d.prepared, c.UID)
		out[c.UID] = nil
	}
	return out, nil
}

// HandleError is called for problems in the background (publishing
// slices); the helper retries, so they are only worth a log line.
func (d *Driver) HandleError(_ context.Context, err error, msg string) {
	fmt.Printf("dra driver %s: %s: %v\n", hardware.DriverNVIDIAGPU, msg, err)
}

// WatchHealthStatus reports that the fake devices have no health to watch.
func (d *Driver) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}
