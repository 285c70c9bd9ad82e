package market

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
)

// The labels the Kubernetes store puts on each version's ConfigMap, beside
// cube's standard labels (kind modelversion, release the model's name,
// part-of market). List turns a Filter into a selector on them.
const (
	LabelModel   = "market.cube.dev/model"
	LabelVersion = "market.cube.dev/version"
	LabelStage   = "market.cube.dev/stage"
	// LabelTagPrefix + tag is set to "true" for every tag of the version.
	LabelTagPrefix = "tag.market.cube.dev/"
)

// versionKey is the ConfigMap data key holding the version as JSON.
const versionKey = "version.json"

// MaxObjectBytes is the most a stored version may take. etcd refuses
// requests above 1.5 MiB and the API server objects above 1 MiB
// (ConfigMap data included); this leaves room for the metadata.
const MaxObjectBytes = 1<<20 - 16<<10

// KubernetesStore keeps each version as a ConfigMap named
// "<model>-v<number>" in one namespace, labelled by cube: no server of its
// own, the API server's resourceVersion for compare-and-swap, label
// selectors for listing. Numbers are allocated by creating the next name:
// of two writers racing for it one gets AlreadyExists, lists again and
// takes the next free one.
type KubernetesStore struct {
	c         client.Client
	namespace string
}

// NewKubernetesStore returns a store in namespace through c.
func NewKubernetesStore(c client.Client, namespace string) (*KubernetesStore, error) {
	var errs field.ErrorList
	if c == nil || isNilValue(c) {
		errs = append(errs, field.Required(field.NewPath("client"), "a controller-runtime client is required"))
	}
	if namespace == "" {
		errs = append(errs, field.Required(field.NewPath("namespace"), "the namespace that holds the registry"))
	}
	for _, msg := range validation.IsDNS1123Label(namespace) {
		errs = append(errs, field.Invalid(field.NewPath("namespace"), namespace, msg))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("new kubernetes store: %w", errs.ToAggregate())
	}
	return &KubernetesStore{c: c, namespace: namespace}, nil
}

func (s *KubernetesStore) usable() error {
	if s == nil || s.c == nil {
		return errors.New("market: kubernetes store is not set up: use NewKubernetesStore")
	}
	return nil
}

// ConfigMapName returns the name of the ConfigMap that holds a version.
func ConfigMapName(model string, number int) string {
	return model + "-v" + strconv.Itoa(number)
}

func (s *KubernetesStore) configMap(v Version) (*corev1.ConfigMap, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", v.Ref(), err)
	}
	if len(raw) > MaxObjectBytes {
		return nil, fmt.Errorf("store %s: %d bytes of JSON, at most %d fit one ConfigMap: %w", v.Ref(), len(raw), MaxObjectBytes, ErrTooLarge)
	}
	id := cube.Identity{Kind: "modelversion", Release: v.Model, PartOf: "market"}
	labels := map[string]string{
		LabelModel:   v.Model,
		LabelVersion: strconv.Itoa(v.Number),
		LabelStage:   string(v.Stage),
	}
	for _, t := range v.Tags {
		labels[LabelTagPrefix+t] = "true"
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   typeMetaConfigMap,
		ObjectMeta: id.ObjectMeta(ConfigMapName(v.Model, v.Number), s.namespace, labels, nil),
		Data:       map[string]string{versionKey: string(raw)},
	}
	cm.ResourceVersion = v.Revision
	return cm, nil
}

func fromConfigMap(cm *corev1.ConfigMap) (Version, error) {
	raw, ok := cm.Data[versionKey]
	if !ok {
		return Version{}, fmt.Errorf("configmap %s/%s has no %s", cm.Namespace, cm.Name, versionKey)
	}
	var v Version
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return Version{}, fmt.Errorf("decode configmap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	v.Revision = cm.ResourceVersion
	return v, nil
}

// Create implements Store.
func (s *KubernetesStore) Create(ctx context.Context, v Version) (Version, error) {
	if err := s.usable(); err != nil {
		return Version{}, err
	}
	v, err := prepareCreate(v, time.Now())
	if err != nil {
		return Version{}, err
	}
	next := 0
	for range maxRetries * 4 {
		// The next free number: one past the highest the API server holds.
		// A writer that loses the race lists again rather than stepping one
		// number at a time, which would trail writers that keep winning.
		existing, err := s.List(ctx, Filter{Model: v.Model})
		if err != nil {
			return Version{}, err
		}
		next = max(next+1, 1)
		if len(existing) > 0 {
			next = max(next, existing[len(existing)-1].Number+1)
		}
		v.Number = next
		cm, err := s.configMap(v)
		if err != nil {
			return Version{}, err
		}
		err = s.c.Create(ctx, cm, client.FieldOwner(cube.ManagedBy))
		if apierrors.IsAlreadyExists(err) {
			continue // another writer took this number
		}
		if err != nil {
			return Version{}, fmt.Errorf("register %s in %s: %w", v.Ref(), s.namespace, err)
		}
		return fromConfigMap(cm)
	}
	return Version{}, fmt.Errorf("register version of %q: too many concurrent registrations: %w", v.Model, ErrConflict)
}

// Get implements Store.
func (s *KubernetesStore) Get(ctx context.Context, model string, number int) (Version, error) {
	if err := s.usable(); err != nil {
		return Version{}, err
	}
	if errs := ValidateModelName(field.NewPath("model"), model); len(errs) > 0 {
		return Version{}, fmt.Errorf("get %s@%d: %w", model, number, errs.ToAggregate())
	}
	cm := &corev1.ConfigMap{}
	err := s.c.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: ConfigMapName(model, number)}, cm)
	if apierrors.IsNotFound(err) {
		return Version{}, fmt.Errorf("get %s@%d: %w", model, number, ErrNotFound)
	}
	if err != nil {
		return Version{}, fmt.Errorf("get %s@%d: %w", model, number, err)
	}
	return fromConfigMap(cm)
}

// Update implements Store. The API server compares resourceVersion, so
// the check holds across processes and machines.
func (s *KubernetesStore) Update(ctx context.Context, v Version) (Version, error) {
	stored, err := s.Get(ctx, v.Model, v.Number)
	if err != nil {
		return Version{}, err
	}
	next, err := prepareUpdate(stored, v, time.Now())
	if err != nil {
		return Version{}, err
	}
	cm, err := s.configMap(next)
	if err != nil {
		return Version{}, err
	}
	err = s.c.Update(ctx, cm, client.FieldOwner(cube.ManagedBy))
	if apierrors.IsConflict(err) {
		return Version{}, fmt.Errorf("update %s: %w", v.Ref(), ErrConflict)
	}
	if err != nil {
		return Version{}, fmt.Errorf("update %s: %w", v.Ref(), err)
	}
	return fromConfigMap(cm)
}

// List implements Store.
func (s *KubernetesStore) List(ctx context.Context, f Filter) ([]Version, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if err := f.validate(); err != nil {
		return nil, fmt.Errorf("list versions: %w", err)
	}
	sel := client.MatchingLabels{cube.LabelManagedBy: cube.ManagedBy, cube.LabelKind: "modelversion"}
	if f.Model != "" {
		sel[LabelModel] = f.Model
	}
	if f.Stage != "" {
		sel[LabelStage] = string(f.Stage)
	}
	if f.Tag != "" {
		sel[LabelTagPrefix+f.Tag] = "true"
	}
	list := &corev1.ConfigMapList{}
	if err := s.c.List(ctx, list, client.InNamespace(s.namespace), sel); err != nil {
		return nil, fmt.Errorf("list versions in %s: %w", s.namespace, err)
	}
	out := make([]Version, 0, len(list.Items))
	var errs []error
	for i := range list.Items {
		v, err := fromConfigMap(&list.Items[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if f.matches(v) {
			out = append(out, v)
		}
	}
	sortVersions(out)
	return slices.Clip(out), errors.Join(errs...)
}

var typeMetaConfigMap = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}

// isNilValue reports whether v is an interface holding a nil pointer.
func isNilValue(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
