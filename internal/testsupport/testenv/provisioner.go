package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// hostPathProvisioner is the provisioner name of the cluster's default
// StorageClass.
const hostPathProvisioner = "cube.test/hostpath"

// startProvisioner makes the default StorageClass and provisions its
// claims as host-path volumes on the one node, as a dynamic provisioner
// would: a PersistentVolume bound to the claim, deleted with its directory
// once the claim is gone. Every access mode works, as all pods share the
// node.
func (n *node) startProvisioner() error {
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        storageName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner: hostPathProvisioner,
		ReclaimPolicy: func() *corev1.PersistentVolumeReclaimPolicy {
			p := corev1.PersistentVolumeReclaimDelete
			return &p
		}(),
		VolumeBindingMode: func() *storagev1.VolumeBindingMode {
			m := storagev1.VolumeBindingImmediate
			return &m
		}(),
	}
	if _, err := n.client.StorageV1().StorageClasses().Create(n.ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create storage class: %w", err)
	}
	root := filepath.Join(n.dir, "volumes")
	if err := os.MkdirAll(root, 0o777); err != nil {
		return err
	}
	n.wg.Go(func() {
		_ = wait.PollUntilContextCancel(n.ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			n.provision(ctx, root)
			return false, nil
		})
	})
	return nil
}

func (n *node) provision(ctx context.Context, root string) {
	claims, err := n.client.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, c := range claims.Items {
		if c.Spec.VolumeName != "" || c.DeletionTimestamp != nil || c.Spec.StorageClassName == nil || *c.Spec.StorageClassName != storageName {
			continue
		}
		name := "pvc-" + string(c.UID)
		path := filepath.Join(root, name)
		if err := os.MkdirAll(path, 0o777); err != nil {
			continue
		}
		_ = os.Chmod(path, 0o777) // any pod user may write, as on a fresh file system
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": hostPathProvisioner}},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: c.Spec.Resources.Requests[corev1.ResourceStorage]},
				AccessModes:                   c.Spec.AccessModes,
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				StorageClassName:              storageName,
				VolumeMode:                    c.Spec.VolumeMode,
				ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: c.Namespace, Name: c.Name, UID: c.UID},
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}},
			},
		}
		_, _ = n.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	}
	volumes, err := n.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, v := range volumes.Items {
		if v.Annotations["pv.kubernetes.io/provisioned-by"] != hostPathProvisioner || v.Status.Phase != corev1.VolumeReleased {
			continue
		}
		if err := n.client.CoreV1().PersistentVolumes().Delete(ctx, v.Name, metav1.DeleteOptions{}); err == nil && v.Spec.HostPath != nil {
			_ = os.RemoveAll(v.Spec.HostPath.Path)
		}
	}
}
