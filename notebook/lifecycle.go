package notebook

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/timebound"
)

// FieldManager is the field manager of the patches Stop, Start and Renew
// send. It is not cube's, so those patches never take fields that applying
// the notebook sets, and applying never undoes them.
const FieldManager = "cube-notebook"

// Stop scales the notebook's StatefulSet to zero. Its pod goes; its home
// volume claim stays (the StatefulSet retains claims when scaled down), so
// Start brings the notebook back with its files.
func Stop(ctx context.Context, c client.Client, namespace, name string) error {
	return stop(ctx, c, namespace, name, "")
}

func stop(ctx context.Context, c client.Client, namespace, name, reason string) error {
	return patchNotebook(ctx, c, namespace, name, "stop", func(sts *appsv1.StatefulSet) {
		sts.Spec.Replicas = ptr.To[int32](0)
		if reason != "" {
			setAnnotation(sts, AnnotationStopReason, reason)
		}
	})
}

// Start scales the notebook's StatefulSet back to one pod, which mounts the
// same home volume claim. It also renews the notebook (see Renew), so that an
// expired notebook a user starts again is not stopped at the next Cull, as
// Cube Studio counts a notebook's lifetime from its last change.
func Start(ctx context.Context, c client.Client, namespace, name string) error {
	now := time.Now()
	return patchNotebook(ctx, c, namespace, name, "start", func(sts *appsv1.StatefulSet) {
		sts.Spec.Replicas = ptr.To[int32](1)
		setAnnotation(sts, AnnotationRenewedAt, now.UTC().Format(time.RFC3339))
		delete(sts.Annotations, AnnotationStopReason)
	})
}

// Renew restarts the notebook's lifetime (AnnotationMaxLifetime) at at, the
// way Cube Studio's renew button does. An at that is the zero time or
// outside 1970–2262 is refused: Cull would expire the notebook at once, or
// never.
func Renew(ctx context.Context, c client.Client, namespace, name string, at time.Time) error {
	if err := timebound.Check("at", at); err != nil {
		return fmt.Errorf("renew notebook %s/%s: %w", namespace, name, err)
	}
	return patchNotebook(ctx, c, namespace, name, "renew", func(sts *appsv1.StatefulSet) {
		setAnnotation(sts, AnnotationRenewedAt, at.UTC().Format(time.RFC3339))
	})
}

// patchNotebook reads the notebook's StatefulSet, refuses anything cube did
// not build as a notebook, and sends change as a JSON merge patch. A nil c
// is an error.
func patchNotebook(ctx context.Context, c client.Client, namespace, name, verb string, change func(*appsv1.StatefulSet)) error {
	if c == nil {
		return fmt.Errorf("%s notebook %s/%s: client: must not be nil", verb, namespace, name)
	}
	sts := &appsv1.StatefulSet{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, sts); err != nil {
		return fmt.Errorf("%s notebook %s/%s: %w", verb, namespace, name, err)
	}
	if !isNotebook(sts) {
		return fmt.Errorf("%s notebook %s/%s: statefulset is not a cube notebook (no %s=%s label)", verb, namespace, name, cube.LabelKind, Kind)
	}
	before := sts.DeepCopy()
	change(sts)
	if err := c.Patch(ctx, sts, client.MergeFrom(before), client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("%s notebook %s/%s: %w", verb, namespace, name, err)
	}
	return nil
}

func isNotebook(sts *appsv1.StatefulSet) bool {
	return sts.Labels[cube.LabelKind] == Kind && sts.Labels[cube.LabelManagedBy] == cube.ManagedBy
}

func setAnnotation(sts *appsv1.StatefulSet, key, value string) {
	if sts.Annotations == nil {
		sts.Annotations = map[string]string{}
	}
	sts.Annotations[key] = value
}
