package cube

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Release returns the release name in namespace as recorded by an earlier
// Apply, for programs that follow a release they did not apply themselves.
// A release with no record (never applied, or deleted) is an error
// wrapping ErrNotFound.
func (c *Client) Release(ctx context.Context, namespace, name string) (*Release, error) {
	if err := c.usable(); err != nil {
		return nil, fmt.Errorf("get release %s/%s: %w", namespace, name, err)
	}
	cm, err := c.getRecord(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get release %s/%s: %w", namespace, name, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return c.releaseFromRecord(cm)
}

func (c *Client) releaseFromRecord(cm *corev1.ConfigMap) (*Release, error) {
	rel := &Release{client: c, Name: cm.Labels[LabelRelease], Namespace: cm.Namespace, Kind: cm.Data[recordKindKey], UID: cm.Data[recordUIDKey], Created: cm.CreationTimestamp.Time}
	if rel.Name == "" {
		rel.Name = strings.TrimPrefix(cm.Name, recordPrefix)
	}
	var err error
	if rel.Objects, err = decodeRefs(cm.Data[recordKey]); err != nil {
		return nil, fmt.Errorf("read release %s/%s: %w", cm.Namespace, rel.Name, err)
	}
	if rel.adopted, err = decodeRefs(cm.Data[recordAdoptedKey]); err != nil {
		return nil, fmt.Errorf("read release %s/%s: %w", cm.Namespace, rel.Name, err)
	}
	return rel, nil
}

// Releases lists the releases recorded in namespace (all namespaces when
// namespace is empty), sorted by namespace and name.
func (c *Client) Releases(ctx context.Context, namespace string, opts ...ReleasesOption) ([]*Release, error) {
	if err := c.usable(); err != nil {
		return nil, fmt.Errorf("list releases: %w", err)
	}
	var o releasesOptions
	for _, opt := range opts {
		if !isNil(opt) {
			opt.applyToReleases(&o)
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMapList"})
	selector := client.MatchingLabels{LabelManagedBy: ManagedBy, labelComponent: recordComponent}
	if o.kind != "" {
		selector[LabelKind] = o.kind
	}
	listOpts := []client.ListOption{selector}
	if namespace != "" {
		listOpts = append(listOpts, client.InNamespace(namespace))
	}
	if err := c.retrying(ctx, func(ctx context.Context) error { return c.c.List(ctx, list, listOpts...) }); err != nil {
		return nil, fmt.Errorf("list releases: %w", err)
	}
	var out []*Release
	for i := range list.Items {
		var cm corev1.ConfigMap
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &cm); err != nil {
			return nil, fmt.Errorf("read release record %s: %w", list.Items[i].GetName(), err)
		}
		rel, err := c.releaseFromRecord(&cm)
		if err != nil {
			return nil, err
		}
		out = append(out, rel)
	}
	slices.SortFunc(out, func(a, b *Release) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out, nil
}
