package cube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// recordPrefix names the ConfigMap that records a release's objects.
const recordPrefix = "cube-release-"

// The keys of a record's data, and the component label that marks it.
const (
	recordKey        = "objects"
	recordKindKey    = "kind"
	recordUIDKey     = "uid"
	recordAdoptedKey = "adopted"
	recordComponent  = "cube-release-record"
	labelComponent   = "app.kubernetes.io/component"
)

var (
	// ErrNotFound is wrapped by the error of Client.Release for a release
	// that has no record (never applied, or deleted).
	ErrNotFound = errors.New("release not found")
	// ErrNameTaken is wrapped by Apply's error when the workload's name
	// belongs to a release of another kind, or one of its objects to
	// another release: Apply then changes nothing of theirs.
	ErrNameTaken = errors.New("name taken by another release")
)

// recordState is the release's record as this Apply last read or wrote
// it: the objects it listed, those of them the release found in place and
// adopted, the release's kind and UID, and the record's resourceVersion
// ("" when there was no record). Writes of the record are conditional on
// that version, so that two programs applying the same release at once do
// not drop each other's objects from it.
type recordState struct {
	refs    []ObjectRef
	adopted []ObjectRef
	kind    string
	uid     string
	version string
	// created is when the record was created (Release.Created).
	created time.Time
}

// claim takes the release's identity from its record: the UID it has, or
// a new one for a new release. A record of another kind is refused: the
// name belongs to that release.
func (r *Release) claim(current recordState) error {
	if current.version == "" {
		if r.UID == "" {
			r.UID = newUID()
		}
		return nil
	}
	if current.kind != "" && r.Kind != "" && current.kind != r.Kind {
		return fmt.Errorf("apply %s %s/%s: %w: %s/%s is a %s release; choose another name, or delete that release first (Client.Release then Release.Delete)",
			r.Kind, r.Namespace, r.Name, ErrNameTaken, r.Namespace, r.Name, current.kind)
	}
	if current.uid == "" { // a record written before releases had UIDs
		current.uid = newUID()
	}
	r.UID = current.uid
	r.Created = current.created
	return nil
}

// newUID returns 128 random bits in hex: a label value.
func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// ownership turns an apply conflict with another release's field manager
// into an error wrapping ErrNameTaken that names that release.
func (c *Client) ownership(rel *Release, err error) error {
	var ce *ConflictError
	if !errors.As(err, &ce) {
		return err
	}
	ours := c.manager(rel)
	for _, f := range ce.Conflicts {
		owner, release, ok := strings.Cut(f.Manager, ":")
		if !ok || f.Manager == ours || validOwner(owner) != nil || !strings.Contains(release, "/") {
			continue
		}
		return fmt.Errorf("apply %s/%s: %w: %s belongs to release %s (field manager %q owns %s); rename the object or the release, delete that release, or use cube.Force to take it: %w",
			rel.Namespace, rel.Name, ErrNameTaken, ce.Object, release, f.Manager, f.Field, err)
	}
	return err
}

// openRecord makes the release's record list every object about to be
// applied before any of them is, so an apply that stops halfway leaves
// nothing Release.Delete cannot find. A new release is recorded with a
// single create; a record that already lists them all is left alone. It
// returns what the record listed before (prev) and what it lists now
// (stored); a dry run writes nothing. A record of another kind of
// workload is refused (ErrNameTaken) before anything is written.
func (c *Client) openRecord(ctx context.Context, rel *Release, dryRun bool, applyOpts []client.ApplyOption) (prev []ObjectRef, stored recordState, err error) {
	if !dryRun {
		if rel.UID == "" {
			rel.UID = newUID()
		}
		version, created, err := c.createRecord(ctx, rel)
		if err != nil {
			return nil, recordState{}, err
		}
		if created {
			return nil, recordState{refs: rel.Objects, kind: rel.Kind, uid: rel.UID, version: version}, nil
		}
	}
	current, err := c.readRecord(ctx, rel.Namespace, rel.Name)
	if err != nil {
		return nil, recordState{}, fmt.Errorf("apply: %w", err)
	}
	if err := rel.claim(current); err != nil {
		return nil, recordState{}, err
	}
	if dryRun || len(minus(rel.Objects, current.refs)) == 0 && current.uid == rel.UID && current.kind == rel.Kind {
		return current.refs, current, nil
	}
	rel.adopted = current.adopted
	stored, err = c.updateRecord(ctx, rel, current, union(current.refs, rel.Objects), applyOpts)
	if err != nil {
		return nil, recordState{}, err
	}
	return current.refs, stored, nil
}

// checkAndOpenRecord checks the pods of objs against their namespace's
// Pod Security level and opens the release's record at the same time:
// they are independent round trips (a read of the namespace, a write of
// the record), and together they are most of what Apply adds to the
// objects' own writes. When the check refuses, the record goes back to
// what it listed before (none: no record), so that a refused apply leaves
// no release behind; were that undone write lost, the record would list
// objects that do not exist, which Delete and Status take in their stride.
func (c *Client) checkAndOpenRecord(ctx context.Context, rel *Release, objs []*unstructured.Unstructured, dryRun bool, applyOpts []client.ApplyOption) (prev []ObjectRef, stored recordState, err error) {
	var psErr error
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		psErr = c.checkPodSecurity(ctx, objs)
	}()
	prev, stored, err = c.openRecord(ctx, rel, dryRun, applyOpts)
	<-checked
	switch {
	case psErr != nil && err == nil && !sameRefs(stored.refs, prev):
		return nil, recordState{}, joinErrors(fmt.Errorf("apply: %w", psErr), c.settleRecord(ctx, rel, stored, prev, applyOpts))
	case psErr != nil:
		return nil, recordState{}, fmt.Errorf("apply: %w", psErr)
	case err != nil:
		return nil, recordState{}, err
	}
	return prev, stored, nil
}

// settleRecord makes the record list objects instead of what from lists,
// or deletes it when that leaves none (see updateRecord).
func (c *Client) settleRecord(ctx context.Context, rel *Release, from recordState, objects []ObjectRef, applyOpts []client.ApplyOption) error {
	_, err := c.updateRecord(ctx, rel, from, objects, applyOpts)
	return err
}

// maxRecordConflicts bounds how often updateRecord reads the record again
// after another writer changed it.
const maxRecordConflicts = 10

// updateRecord replaces the record that lists from.refs (at from.version)
// with one listing want, deleting it when want is empty. When another
// writer changed the record in between (a conflict on the version, or the
// record is gone), it reads it again and keeps what that writer added:
// the objects the record lists now and from did not. It returns what it
// stored.
func (c *Client) updateRecord(ctx context.Context, rel *Release, from recordState, want []ObjectRef, applyOpts []client.ApplyOption) (recordState, error) {
	for conflicts := 0; ; conflicts++ {
		stored, err := c.putRecord(ctx, rel, from.version, want, applyOpts)
		if err == nil {
			return stored, nil
		}
		if !apierrors.IsConflict(err) && !(apierrors.IsNotFound(err) && from.version != "") || conflicts >= maxRecordConflicts {
			if conflicts > 0 {
				err = fmt.Errorf("%w (after %d conflicts with other writers of the record)", err, conflicts)
			}
			return recordState{}, err
		}
		current, err := c.readRecord(ctx, rel.Namespace, rel.Name)
		if err != nil {
			return recordState{}, fmt.Errorf("record release %s/%s: %w", rel.Namespace, rel.Name, err)
		}
		if current.version != "" && current.kind != "" && current.kind != rel.Kind {
			return recordState{}, fmt.Errorf("record release %s/%s: %w: a %s release took the name meanwhile", rel.Namespace, rel.Name, ErrNameTaken, current.kind)
		}
		want = union(want, minus(current.refs, from.refs))
		rel.adopted = union(rel.adopted, current.adopted)
		from = current
	}
}

// putRecord writes the record listing objects, or deletes it when there
// are none, on condition that it is at version ("": that there is none).
// The record is cube's own, so its fields are taken over from whichever
// manager wrote them.
func (c *Client) putRecord(ctx context.Context, rel *Release, version string, objects []ObjectRef, applyOpts []client.ApplyOption) (recordState, error) {
	if len(objects) == 0 {
		record := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: recordPrefix + rel.Name, Namespace: rel.Namespace}}
		var opts []client.DeleteOption
		if version != "" {
			opts = append(opts, client.Preconditions{ResourceVersion: &version})
		}
		err := c.retrying(ctx, func(ctx context.Context) error { return c.c.Delete(ctx, record, opts...) })
		if err != nil && !(apierrors.IsNotFound(err) && version == "") {
			return recordState{}, fmt.Errorf("remove release record %s/%s: %w", rel.Namespace, rel.Name, err)
		}
		return recordState{}, nil
	}
	adopted := intersect(rel.adopted, objects)
	cm := recordOf(rel, objects, adopted)
	// Server-side apply takes a resourceVersion in the applied object as
	// a precondition: a record changed since it was read is a conflict.
	cm.ResourceVersion = version
	u, err := ToUnstructured(cm)
	if err != nil {
		return recordState{}, err
	}
	opts := append(slices.Clone(applyOpts), client.ForceOwnership)
	err = c.retrying(ctx, func(ctx context.Context) error {
		return c.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), opts...)
	})
	if err != nil {
		return recordState{}, fmt.Errorf("record release %s/%s: %w", rel.Namespace, rel.Name, err)
	}
	return recordState{refs: objects, adopted: adopted, kind: rel.Kind, uid: rel.UID, version: u.GetResourceVersion()}, nil
}

// recordOf is the ConfigMap that records a release: its kind and UID, its
// objects, and those of them it adopted. It carries the release's labels
// and kind, so that Releases can select by kind.
func recordOf(rel *Release, objects, adopted []ObjectRef) *corev1.ConfigMap {
	data := map[string]string{recordKey: encodeRefs(objects), recordKindKey: rel.Kind, recordUIDKey: rel.UID}
	if len(adopted) > 0 {
		data[recordAdoptedKey] = encodeRefs(adopted)
	}
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      recordPrefix + rel.Name,
			Namespace: rel.Namespace,
			Labels: map[string]string{
				LabelManagedBy:  ManagedBy,
				LabelRelease:    rel.Name,
				LabelReleaseUID: rel.UID,
				LabelKind:       rel.Kind,
				labelComponent:  recordComponent,
			},
		},
		Data: data,
	}
}

func encodeRefs(objects []ObjectRef) string {
	refs := slices.Clone(objects)
	slices.SortFunc(refs, compareRefs)
	lines := make([]string, len(refs))
	for i, r := range refs {
		lines[i] = r.encode()
	}
	return strings.Join(lines, "\n")
}

func decodeRefs(text string) ([]ObjectRef, error) {
	var out []ObjectRef
	for line := range strings.SplitSeq(text, "\n") {
		if line == "" {
			continue
		}
		ref, err := decodeRef(line)
		if err != nil {
			return nil, err
		}
		out = append(out, ref)
	}
	return out, nil
}

// createRecord records a release that has no record yet, returning the
// record's resourceVersion; false when it has one. A create whose answer
// was lost and is retried finds the record it made, and reads it.
func (c *Client) createRecord(ctx context.Context, rel *Release) (string, bool, error) {
	cm := recordOf(rel, rel.Objects, nil)
	err := c.retrying(ctx, func(ctx context.Context) error { return c.c.Create(ctx, cm, client.FieldOwner(c.manager(rel))) })
	switch {
	case apierrors.IsAlreadyExists(err):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("record release %s/%s: %w", rel.Namespace, rel.Name, err)
	}
	rel.Created = cm.CreationTimestamp.Time
	return cm.ResourceVersion, true, nil
}

// readRecord reads the release's record: the zero recordState when the
// release was never applied (or its namespace does not exist).
func (c *Client) readRecord(ctx context.Context, namespace, name string) (recordState, error) {
	cm, err := c.getRecord(ctx, namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		return recordState{}, nil
	case err != nil:
		return recordState{}, err
	}
	rel, err := c.releaseFromRecord(cm)
	if err != nil {
		return recordState{}, err
	}
	return recordState{refs: rel.Objects, adopted: rel.adopted, kind: rel.Kind, uid: rel.UID, version: cm.ResourceVersion, created: rel.Created}, nil
}

func (c *Client) getRecord(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	var cm corev1.ConfigMap
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	err := c.retrying(ctx, func(ctx context.Context) error {
		return c.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: recordPrefix + name}, u)
	})
	if err != nil {
		return nil, fmt.Errorf("get release %s/%s: %w", namespace, name, err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cm); err != nil {
		return nil, fmt.Errorf("read release %s/%s: %w", namespace, name, err)
	}
	return &cm, nil
}
