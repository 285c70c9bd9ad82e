package cube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// in, the kind of workload that made it, and references to its objects in
// apply order.
type Release struct {
	Name      string
	Namespace string
	// Kind is the builder kind of the workload (its objects' cube.dev/kind
	// label: "tenant", "pytorchjob", "vllm"…). A name belongs to one kind
	// at a time: Apply refuses a workload of another kind under a name in
	// use (ErrNameTaken).
	Kind string
	// UID tells this release from an earlier one of the same name: every
	// object the release applies carries it in LabelReleaseUID, and only
	// objects that carry it are ever pruned or deleted.
	UID string
	// Created is when the release was first applied: when its record
	// was created. It is zero for a DryRun of a release never applied.
	Created time.Time
	Objects []ObjectRef
	// Pruned are the objects of the release's previous Apply that this
	// Apply deleted (with DryRun: would delete) because the workload no
	// longer has them. Empty for releases read back with Client.Release.
	Pruned []ObjectRef
	// Warnings are what the API server said of the objects it accepted
	// (its Warning headers, each once): a Pod Security level in warn or
	// audit mode that a pod would violate ("would violate PodSecurity
	// \"restricted:latest\": ..."), a deprecated API version. Only a Client
	// made by New sees them; empty for releases read back.
	Warnings []string

	client *Client
	// adopted are objects of the release that existed before it applied
	// them (a Namespace made by an administrator): never deleted with it.
	adopted []ObjectRef
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

// Status reads every object of the release once and summarises them (see
// Summarize): an object that does not exist is Missing, one of a kind the
// client cannot read Unknown. While the release is neither Ready nor
// Succeeded, Status also lists what its pods are stuck on and the pods
// the cluster refused to create (Refusals).
func (r *Release) Status(ctx context.Context) (Status, error) {
	if err := r.usable(); err != nil {
		return Status{}, fmt.Errorf("status: %w", err)
	}
	objs := make([]ObjectStatus, 0, len(r.Objects))
	created := make(map[ObjectRef]time.Time, len(r.Objects))
	for _, ref := range r.Objects {
		u, err := r.get(ctx, ref)
		switch {
		case apierrors.IsNotFound(err):
			objs = append(objs, ObjectStatus{Ref: ref, Phase: Missing, Reason: "NotFound"})
		case err != nil:
			return Status{}, fmt.Errorf("status of %s: %w", ref, err)
		case !r.owns(u):
			objs = append(objs, ObjectStatus{Ref: ref, Phase: Missing, Reason: "NotOwned",
				Message: "an object of this name exists but another release (or no release) made it"})
		default:
			objs = append(objs, r.client.table.read(u))
			created[ref] = u.GetCreationTimestamp().Time
		}
	}
	st := Summarize(objs)
	if !st.settled() && st.Phase != Missing {
		pods, podsCreated, err := r.podProblems(ctx)
		if err != nil {
			return Status{}, err
		}
		st.Pods = pods
		if st.Refusals, err = r.refusals(ctx, created); err != nil {
			return Status{}, err
		}
		st.Refusals = stillRefused(st.Refusals, podsCreated)
		if st.Queue, err = r.queueWaits(ctx); err != nil {
			return Status{}, err
		}
	}
	return st, nil
}

// owns reports whether u is an object of this release: it carries the
// release's labels and, when the release has a UID, that UID.
func (r *Release) owns(u *unstructured.Unstructured) bool {
	l := u.GetLabels()
	if l[LabelRelease] != r.Name || l[LabelManagedBy] != ManagedBy {
		return false
	}
	return r.UID == "" || l[LabelReleaseUID] == r.UID
}

// Delete deletes the objects of the release (those r lists and those its
// record lists), last applied first, with foreground propagation
// (dependents such as pods go before their owner), and then the release
// record. It deletes only what the release created: an object that no
// longer carries the release's labels and UID (another release or a
// person took it over), and one the release found in place and adopted
// (a Namespace made by an administrator), are left alone. Deleting a
// Tenant's release deletes the Namespace it created, and with it
// everything in it. Objects already gone are not an error.
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
	owner := *r
	if record.version != "" {
		if record.kind != "" && r.Kind != "" && record.kind != r.Kind {
			return fmt.Errorf("delete %s/%s: %w: the record is now a %s release's", r.Namespace, r.Name, ErrNameTaken, record.kind)
		}
		owner.UID = nonEmpty(owner.UID, record.uid)
		owner.adopted = union(owner.adopted, record.adopted)
	}
	objects := union(r.Objects, record.refs)
	if _, _, err := r.client.deleteOwned(ctx, &owner, objects, true, false); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	cm := &unstructured.Unstructured{}
	cm.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	cm.SetNamespace(r.Namespace)
	cm.SetName(recordPrefix + r.Name)
	var opts []client.DeleteOption
	if record.version != "" {
		opts = append(opts, client.Preconditions{ResourceVersion: &record.version})
	}
	if err := r.client.retrying(ctx, func(ctx context.Context) error { return r.client.c.Delete(ctx, cm, opts...) }); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete release record %s/%s: %w", r.Namespace, r.Name, err)
	}
	return nil
}
