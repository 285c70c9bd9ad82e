package cube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ObjectRef names one object of a release.
type ObjectRef struct {
	schema.GroupVersionKind
	Namespace string
	Name      string
}

// RefOf returns the reference of obj; the zero ObjectRef for a nil one.
func RefOf(obj client.Object) ObjectRef {
	if isNil(obj) {
		return ObjectRef{}
	}
	return ObjectRef{GroupVersionKind: obj.GetObjectKind().GroupVersionKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// String reads like kubectl: "Deployment team-a/qwen" or
// "PyTorchJob.kubeflow.org team-a/llama-sft".
func (r ObjectRef) String() string {
	kind := r.Kind
	if r.Group != "" {
		kind += "." + r.Group
	}
	if r.Namespace == "" {
		return kind + " " + r.Name
	}
	return kind + " " + r.Namespace + "/" + r.Name
}

func (r ObjectRef) encode() string {
	apiVersion, kind := r.ToAPIVersionAndKind()
	ns := r.Namespace
	if ns == "" {
		ns = "-"
	}
	return strings.Join([]string{apiVersion, kind, ns, r.Name}, " ")
}

func decodeRef(line string) (ObjectRef, error) {
	f := strings.Fields(line)
	if len(f) != 4 {
		return ObjectRef{}, fmt.Errorf("bad object reference %q", line)
	}
	gv, err := schema.ParseGroupVersion(f[0])
	if err != nil {
		return ObjectRef{}, fmt.Errorf("bad object reference %q: %w", line, err)
	}
	ns := f[2]
	if ns == "-" {
		ns = ""
	}
	return ObjectRef{GroupVersionKind: gv.WithKind(f[1]), Namespace: ns, Name: f[3]}, nil
}

func compareRefs(a, b ObjectRef) int {
	return cmp.Or(
		cmp.Compare(rankOf(a.Kind), rankOf(b.Kind)),
		cmp.Compare(a.Group, b.Group),
		cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Namespace, b.Namespace),
		cmp.Compare(a.Name, b.Name),
	)
}

// Release is what one Apply created: a name, the namespace its record lives
// in, and references to its objects in apply order.
type Release struct {
	Name      string
	Namespace string
	Objects   []ObjectRef
	// Pruned are the objects of the release's previous Apply that this
	// Apply deleted (with DryRun: would delete) because the workload no
	// longer has them. Empty for releases read back with Client.Release.
	Pruned []ObjectRef

	client *Client
	// applied is the resourceVersion the server gave each object this
	// Apply wrote, so that Wait does not judge an object by an older one.
	applied map[ObjectRef]string
}

// usable reports why r cannot be followed: a nil Release, or one not made
// by a Client (Apply, Release, Releases).
func (r *Release) usable() error {
	switch {
	case r == nil:
		return errors.New("cube: release is nil")
	case r.client == nil:
		return fmt.Errorf("cube: release %q was not made by a cube.Client: get it from Apply, Client.Release or Client.Releases", r.Name)
	}
	return r.client.usable()
}

func (r *Release) get(ctx context.Context, ref ObjectRef) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ref.GroupVersionKind)
	err := r.client.retrying(ctx, func(ctx context.Context) error {
		return r.client.c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u)
	})
	return u, err
}

// Status reads every object of the release once and summarises them. An
// object that does not exist is InProgress with reason NotFound.
func (r *Release) Status(ctx context.Context) (Status, error) {
	if err := r.usable(); err != nil {
		return Status{}, fmt.Errorf("status: %w", err)
	}
	objs := make([]ObjectStatus, 0, len(r.Objects))
	for _, ref := range r.Objects {
		u, err := r.get(ctx, ref)
		switch {
		case apierrors.IsNotFound(err):
			objs = append(objs, ObjectStatus{Ref: ref, Phase: InProgress, Reason: "NotFound"})
		case err != nil:
			return Status{}, fmt.Errorf("status of %s: %w", ref, err)
		default:
			objs = append(objs, readStatusWith(r.client.readers, u))
		}
	}
	st := Summarize(objs)
	if !st.settled() {
		pods, err := r.podProblems(ctx)
		if err != nil {
			return Status{}, err
		}
		st.Pods = pods
	}
	return st, nil
}

// Delete deletes every object of the release (those r lists and those its
// record lists), last applied first, with foreground propagation
// (dependents such as pods go before their owner), and then the release
// record. Objects already gone are not an error.
func (r *Release) Delete(ctx context.Context) error {
	if err := r.usable(); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	// The record may list more than r: objects an earlier Apply kept
	// (NoPrune), or that another Apply of the release added meanwhile.
	// Deleting it with them left would orphan them.
	record, err := r.client.readRecord(ctx, r.Namespace, r.Name)
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	objects := union(r.Objects, record.refs)
	slices.SortStableFunc(objects, func(a, b ObjectRef) int { return cmp.Compare(rankOf(a.Kind), rankOf(b.Kind)) })
	var errs []error
	policy := metav1.DeletePropagationForeground
	for i := len(objects) - 1; i >= 0; i-- {
		ref := objects[i]
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(ref.GroupVersionKind)
		u.SetNamespace(ref.Namespace)
		u.SetName(ref.Name)
		err := r.client.retrying(ctx, func(ctx context.Context) error {
			return r.client.c.Delete(ctx, u, client.PropagationPolicy(policy))
		})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s: %w", ref, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	cm := &unstructured.Unstructured{}
	cm.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	cm.SetNamespace(r.Namespace)
	cm.SetName(recordPrefix + r.Name)
	if err := r.client.retrying(ctx, func(ctx context.Context) error { return r.client.c.Delete(ctx, cm) }); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete release record %s/%s: %w", r.Namespace, r.Name, err)
	}
	return nil
}
