package market

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Store keeps registered versions. FileStore (embedded, one bbolt file)
// and KubernetesStore (ConfigMaps in a namespace) implement it and pass the
// same conformance suite; a Registry adds references, stages and search on
// top of any Store.
//
// Stores validate what they write, keep Artifact, Lineage, Description and
// Created immutable (ErrImmutable) and compare and swap on Revision
// (ErrConflict). They return copies: a caller may change what it gets.
type Store interface {
	// Create stores v as the next version of v.Model: it sets Number (the
	// highest so far plus one), Created when zero, Stage when empty, and
	// Revision, and returns what it stored.
	Create(ctx context.Context, v Version) (Version, error)
	// Get returns version number of model, or an error wrapping ErrNotFound.
	Get(ctx context.Context, model string, number int) (Version, error)
	// Update replaces the mutable fields (Metrics, Tags, Stage, History) of
	// the stored version when v.Revision is the stored revision, and fails
	// with ErrConflict otherwise.
	Update(ctx context.Context, v Version) (Version, error)
	// List returns the versions that match f, by model name then number.
	List(ctx context.Context, f Filter) ([]Version, error)
}

// Filter narrows List to one model, stage or tag; its zero value matches
// every version. The Kubernetes store turns it into a label selector.
type Filter struct {
	Model string
	Stage Stage
	Tag   string
}

func (f Filter) matches(v Version) bool {
	return (f.Model == "" || v.Model == f.Model) &&
		(f.Stage == "" || v.Stage == f.Stage) &&
		(f.Tag == "" || v.HasTag(f.Tag))
}

func (f Filter) validate() error {
	var errs field.ErrorList
	if f.Model != "" {
		errs = append(errs, ValidateModelName(field.NewPath("model"), f.Model)...)
	}
	if f.Stage != "" && !f.Stage.Valid() {
		errs = append(errs, field.NotSupported(field.NewPath("stage"), f.Stage, stages))
	}
	if f.Tag != "" {
		errs = append(errs, validateTag(field.NewPath("tag"), f.Tag)...)
	}
	return errs.ToAggregate()
}

// prepareCreate checks a version about to be created and fills what the
// caller may leave out. Stores call it before assigning the number.
func prepareCreate(v Version, now time.Time) (Version, error) {
	v = v.Clone()
	if v.Stage == "" {
		v.Stage = StageNone
	}
	if v.Created.IsZero() {
		v.Created = now
	}
	v.Created = v.Created.UTC().Truncate(time.Microsecond)
	v.Number, v.Revision = 0, ""
	if err := v.Validate(); err != nil {
		return Version{}, fmt.Errorf("register version of %q: %w", v.Model, err)
	}
	if errs := v.validateTimes(now); len(errs) > 0 {
		return Version{}, fmt.Errorf("register version of %q: %w", v.Model, errs.ToAggregate())
	}
	return v, nil
}

// prepareUpdate checks an update against the stored version.
func prepareUpdate(stored, v Version, now time.Time) (Version, error) {
	if err := v.Validate(); err != nil {
		return Version{}, fmt.Errorf("update %s: %w", v.Ref(), err)
	}
	// Created never changes (checkImmutable below): the stored one is checked.
	withStored := v
	withStored.Created = stored.Created
	if errs := withStored.validateTimes(now); len(errs) > 0 {
		return Version{}, fmt.Errorf("update %s: %w", v.Ref(), errs.ToAggregate())
	}
	if v.Stage == "" {
		return Version{}, fmt.Errorf("update %s: %w", v.Ref(), field.Required(field.NewPath("stage"), "a stored version has a stage"))
	}
	if v.Revision != stored.Revision {
		return Version{}, fmt.Errorf("update %s at revision %q (stored %q): %w", v.Ref(), v.Revision, stored.Revision, ErrConflict)
	}
	if err := checkImmutable(stored, v); err != nil {
		return Version{}, err
	}
	out := v.Clone()
	out.Created = stored.Created
	return out, nil
}

func sortVersions(vs []Version) {
	slices.SortFunc(vs, func(a, b Version) int {
		return cmp.Or(strings.Compare(a.Model, b.Model), cmp.Compare(a.Number, b.Number))
	})
}

// Registry is a team's model registry on a Store: it resolves references
// ("support-bot@production"), moves versions between stages with a
// history, records metrics and tags, and searches. Every change is a
// compare-and-swap on the stored version, retried on conflict, so several
// writers (processes, or pods of a controller) are safe.
type Registry struct {
	store Store
	now   func() time.Time
}

// NewRegistry returns a registry on store.
func NewRegistry(store Store) *Registry { return &Registry{store: store, now: time.Now} }

func (r *Registry) usable() error {
	if r == nil || isNilStore(r.store) {
		return errors.New("market: registry has no store: use NewRegistry")
	}
	return nil
}

func isNilStore(s Store) bool { return s == nil || isNilValue(s) }

// Register stores v as the next version of v.Model and returns it with its
// number. Stage defaults to none.
func (r *Registry) Register(ctx context.Context, v Version) (Version, error) {
	if err := r.usable(); err != nil {
		return Version{}, err
	}
	return r.store.Create(ctx, v)
}

// Get resolves a reference such as "support-bot", "support-bot@3" or
// "support-bot@production" (see ParseReference).
func (r *Registry) Get(ctx context.Context, ref string) (Version, error) {
	parsed, err := ParseReference(ref)
	if err != nil {
		return Version{}, err
	}
	return r.Resolve(ctx, parsed)
}

// Resolve returns the version a parsed reference names: the number, the
// version that entered the stage last, or the newest version.
func (r *Registry) Resolve(ctx context.Context, ref Reference) (Version, error) {
	if err := r.usable(); err != nil {
		return Version{}, err
	}
	if ref.Number > 0 {
		return r.store.Get(ctx, ref.Model, ref.Number)
	}
	vs, err := r.store.List(ctx, Filter{Model: ref.Model, Stage: ref.Stage})
	if err != nil {
		return Version{}, err
	}
	if len(vs) == 0 {
		return Version{}, fmt.Errorf("resolve %s: %w", ref, ErrNotFound)
	}
	if ref.Stage == "" {
		return vs[len(vs)-1], nil
	}
	// The version that entered the stage last: after a rollback to an
	// older number, it is the one the stage means.
	return slices.MaxFunc(vs, func(a, b Version) int {
		return cmp.Or(enteredStage(a).Compare(enteredStage(b)), cmp.Compare(a.Number, b.Number))
	}), nil
}

func enteredStage(v Version) time.Time {
	if len(v.History) == 0 {
		return v.Created
	}
	return v.History[len(v.History)-1].At
}

// Versions returns every version of model, oldest first.
func (r *Registry) Versions(ctx context.Context, model string) ([]Version, error) {
	if err := r.usable(); err != nil {
		return nil, err
	}
	if errs := ValidateModelName(field.NewPath("model"), model); len(errs) > 0 {
		return nil, fmt.Errorf("list versions: %w", errs.ToAggregate())
	}
	return r.store.List(ctx, Filter{Model: model})
}

// maxRetries bounds the compare-and-swap loop of Change: a version that
// changes under a writer this many times in a row is contended enough that
// the caller should hear about it.
const maxRetries = 16

// Change reads the version ref names, applies change to a copy and writes
// it back, reading again and re-applying change when another writer got
// there first. change must only touch Metrics, Tags, Stage and History and
// may be called more than once. An error from change stops the loop and is
// returned.
func (r *Registry) Change(ctx context.Context, ref string, change func(*Version) error) (Version, error) {
	if err := r.usable(); err != nil {
		return Version{}, err
	}
	if change == nil {
		return Version{}, errors.New("market: change func is nil")
	}
	parsed, err := ParseReference(ref)
	if err != nil {
		return Version{}, err
	}
	number := parsed.Number
	for range maxRetries {
		var v Version
		if number > 0 {
			v, err = r.store.Get(ctx, parsed.Model, number)
		} else {
			v, err = r.Resolve(ctx, parsed)
		}
		if err != nil {
			return Version{}, err
		}
		// A stage or "latest" reference is resolved once: a retry changes the
		// version first chosen, not whatever the reference means later.
		number = v.Number
		if err := change(&v); err != nil {
			return Version{}, fmt.Errorf("change %s: %w", v.Ref(), err)
		}
		updated, err := r.store.Update(ctx, v)
		if errors.Is(err, ErrConflict) {
			if err := ctx.Err(); err != nil {
				return Version{}, err
			}
			continue
		}
		return updated, err
	}
	return Version{}, fmt.Errorf("change %s: gave up after %d conflicting writes: %w", ref, maxRetries, ErrConflict)
}

// RecordMetrics merges metrics into the version's metrics (a metric of the
// same name is replaced).
func (r *Registry) RecordMetrics(ctx context.Context, ref string, metrics map[string]float64) (Version, error) {
	var errs field.ErrorList
	for _, k := range sortedKeys(metrics) {
		errs = append(errs, validateMetric(field.NewPath("metrics").Key(k), k, metrics[k])...)
	}
	if len(errs) > 0 {
		return Version{}, fmt.Errorf("record metrics of %s: %w", ref, errs.ToAggregate())
	}
	return r.Change(ctx, ref, func(v *Version) error {
		if v.Metrics == nil {
			v.Metrics = map[string]float64{}
		}
		maps.Copy(v.Metrics, metrics)
		return nil
	})
}

// Tag adds tags to the version; tags it already has are kept once.
func (r *Registry) Tag(ctx context.Context, ref string, tags ...string) (Version, error) {
	var errs field.ErrorList
	for i, t := range tags {
		errs = append(errs, validateTag(field.NewPath("tags").Index(i), t)...)
	}
	if len(errs) > 0 {
		return Version{}, fmt.Errorf("tag %s: %w", ref, errs.ToAggregate())
	}
	return r.Change(ctx, ref, func(v *Version) error {
		for _, t := range tags {
			if !v.HasTag(t) {
				v.Tags = append(v.Tags, t)
			}
		}
		return nil
	})
}

// Untag removes tags from the version.
func (r *Registry) Untag(ctx context.Context, ref string, tags ...string) (Version, error) {
	return r.Change(ctx, ref, func(v *Version) error {
		v.Tags = slices.DeleteFunc(v.Tags, func(t string) bool { return slices.Contains(tags, t) })
		return nil
	})
}

// Promotion describes a stage change: who made it and why, both recorded
// in the version's history.
type Promotion struct {
	By     string
	Reason string
	// Rollout, when set, is called with the promoted version after a
	// promotion to production: apply the serving release to it there
	// (Entry.Serve and cube.Client.Apply, whose server-side apply
	// rolls the Deployment). Its error is returned; the promotion stands.
	Rollout func(ctx context.Context, v Version) error
}

// Promote moves the version ref names to stage, recording the change. A
// version promoted to production moves the model's previous production
// versions to archived, then calls p.Rollout, so "model@production" names one version; the
// returned slice holds the promoted version first, then the archived ones.
// The archiving is a second write per version: a crash between the two
// leaves two production versions, of which model@production still names the
// one promoted last.
func (r *Registry) Promote(ctx context.Context, ref string, to Stage, p Promotion) ([]Version, error) {
	if !to.Valid() {
		return nil, fmt.Errorf("promote %s: %w", ref, field.NotSupported(field.NewPath("stage"), to, stages))
	}
	promoted, err := r.Change(ctx, ref, func(v *Version) error { r.moveStage(v, to, p); return nil })
	if err != nil {
		return nil, err
	}
	out := []Version{promoted}
	if to != StageProduction {
		return out, nil
	}
	previous, err := r.store.List(ctx, Filter{Model: promoted.Model, Stage: StageProduction})
	if err != nil {
		return out, err
	}
	var errs []error
	for _, old := range previous {
		if old.Number == promoted.Number {
			continue
		}
		archived, err := r.Change(ctx, old.Ref(), func(v *Version) error {
			if v.Stage == StageProduction {
				r.moveStage(v, StageArchived, Promotion{By: p.By, Reason: "replaced in production by " + promoted.Ref()})
			}
			return nil
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, archived)
	}
	if p.Rollout != nil {
		if err := p.Rollout(ctx, promoted); err != nil {
			errs = append(errs, fmt.Errorf("roll out %s: %w", promoted.Ref(), err))
		}
	}
	return out, errors.Join(errs...)
}

func (r *Registry) moveStage(v *Version, to Stage, p Promotion) {
	if v.Stage == to {
		return
	}
	now := r.now().UTC().Truncate(time.Microsecond)
	if len(v.History) > 0 && !now.After(v.History[len(v.History)-1].At) {
		// Keep the history ordered even when the clock is coarse.
		now = v.History[len(v.History)-1].At.Add(time.Microsecond)
	}
	v.History = append(v.History, StageChange{From: v.Stage, To: to, At: now, By: p.By, Reason: p.Reason})
	v.Stage = to
}

// Query is a search of the registry. Every set field must match.
type Query struct {
	// Name matches models whose name contains it, case-insensitively.
	Name string
	// Model matches one model exactly.
	Model string
	// Tags must all be on the version.
	Tags []string
	// Stage matches versions in that stage.
	Stage Stage
	// MinMetrics are lower bounds: the version must have each metric, at
	// least the value given.
	MinMetrics map[string]float64
	// OrderBy sorts by that metric, highest first (versions without it
	// last); empty sorts by model name then number. A metric none of the
	// matching versions has is an error: it is most likely misspelt, and
	// the results would come back unordered.
	OrderBy string
	// Limit caps the results; 0 means no cap.
	Limit int
}

// Search returns the versions that match q.
func (r *Registry) Search(ctx context.Context, q Query) ([]Version, error) {
	if err := r.usable(); err != nil {
		return nil, err
	}
	var errs field.ErrorList
	if q.Model != "" {
		errs = append(errs, ValidateModelName(field.NewPath("model"), q.Model)...)
	}
	for i, t := range q.Tags {
		errs = append(errs, validateTag(field.NewPath("tags").Index(i), t)...)
	}
	if q.Stage != "" && !q.Stage.Valid() {
		errs = append(errs, field.NotSupported(field.NewPath("stage"), q.Stage, stages))
	}
	for _, k := range sortedKeys(q.MinMetrics) {
		errs = append(errs, validateMetric(field.NewPath("minMetrics").Key(k), k, q.MinMetrics[k])...)
	}
	if q.Limit < 0 {
		errs = append(errs, field.Invalid(field.NewPath("limit"), q.Limit, "must not be negative"))
	}
	if q.OrderBy != "" && strings.TrimSpace(q.OrderBy) != q.OrderBy {
		errs = append(errs, field.Invalid(field.NewPath("orderBy"), q.OrderBy, "must not begin or end with spaces"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("search: %w", errs.ToAggregate())
	}
	// The store narrows by one model, stage and tag (label selectors in the
	// cluster); the rest is filtered here.
	f := Filter{Model: q.Model, Stage: q.Stage}
	if len(q.Tags) > 0 {
		f.Tag = q.Tags[0]
	}
	vs, err := r.store.List(ctx, f)
	if err != nil {
		return nil, err
	}
	name := strings.ToLower(q.Name)
	out := vs[:0]
	for _, v := range vs {
		if !strings.Contains(v.Model, name) {
			continue
		}
		if !slices.ContainsFunc(q.Tags, func(t string) bool { return !v.HasTag(t) }) && meetsMetrics(v, q.MinMetrics) {
			out = append(out, v)
		}
	}
	if q.OrderBy != "" && len(out) > 0 && !slices.ContainsFunc(out, func(v Version) bool { _, ok := v.Metrics[q.OrderBy]; return ok }) {
		return nil, fmt.Errorf("search: orderBy: Invalid value: %q: none of the %d matching versions has this metric", q.OrderBy, len(out))
	}
	if q.OrderBy != "" {
		slices.SortStableFunc(out, func(a, b Version) int {
			av, aok := a.Metrics[q.OrderBy]
			bv, bok := b.Metrics[q.OrderBy]
			switch {
			case aok && bok:
				return cmp.Compare(bv, av)
			case aok:
				return -1
			case bok:
				return 1
			}
			return 0
		})
	}
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

func meetsMetrics(v Version, min map[string]float64) bool {
	for k, bound := range min {
		if got, ok := v.Metrics[k]; !ok || got < bound {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
