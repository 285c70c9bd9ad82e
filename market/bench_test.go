package market_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/market"
)

// rawStore is the baseline each registry operation is measured against:
// the same storage used directly, versions kept as JSON under model@number
// with no validation, revisions, locking beyond the storage's own, or
// index. What the registry costs above it is the registry's.
type rawStore interface {
	put(ctx context.Context, v market.Version) error
	get(ctx context.Context, model string, number int) (market.Version, error)
	scan(ctx context.Context) ([]market.Version, error)
}

// fill registers n versions spread over 100 models, a tenth of them
// tagged and scored, in the registry and the same versions in raw.
func fill(b *testing.B, reg *market.Registry, raw rawStore, n int) {
	b.Helper()
	for i := range n {
		v := sampleVersion(fmt.Sprintf("model-%02d", i%100))
		if i%10 == 0 {
			v.Tags = []string{"candidate"}
			v.Metrics = map[string]float64{"mmlu/acc": float64(i%1000) / 1000}
		}
		_, err := reg.Register(b.Context(), v)
		require.NoError(b, err)
		v.Number = i/100 + 1
		require.NoError(b, raw.put(b.Context(), v))
	}
}

// search is the baseline's Search: every version read and filtered.
func search(ctx context.Context, raw rawStore) ([]market.Version, error) {
	all, err := raw.scan(ctx)
	if err != nil {
		return nil, err
	}
	var found []market.Version
	for _, v := range all {
		if v.HasTag("candidate") && v.Metrics["mmlu/acc"] >= 0.5 {
			found = append(found, v)
		}
	}
	slices.SortFunc(found, func(a, b market.Version) int {
		switch {
		case a.Metrics["mmlu/acc"] > b.Metrics["mmlu/acc"]:
			return -1
		case a.Metrics["mmlu/acc"] < b.Metrics["mmlu/acc"]:
			return 1
		}
		return 0
	})
	return found[:min(10, len(found))], nil
}

func benchRegistry(b *testing.B, store market.Store, raw rawStore, versions int) {
	b.ReportAllocs()
	reg := market.NewRegistry(store)
	fill(b, reg, raw, versions)
	ctx := b.Context()
	compare := func(name string, cube, baseline func(b *testing.B)) {
		b.Run(name, func(b *testing.B) {
			b.Run("cube", func(b *testing.B) { b.ReportAllocs(); cube(b) })
			b.Run("baseline", func(b *testing.B) { b.ReportAllocs(); baseline(b) })
		})
	}
	compare("register", func(b *testing.B) {
		for b.Loop() {
			_, err := reg.Register(ctx, sampleVersion("bench"))
			require.NoError(b, err)
		}
	}, func(b *testing.B) {
		n := 0
		for b.Loop() {
			n++
			v := sampleVersion("bench")
			v.Number = n
			require.NoError(b, raw.put(ctx, v))
		}
	})
	compare("get", func(b *testing.B) {
		for b.Loop() {
			_, err := reg.Get(ctx, "model-42@7")
			require.NoError(b, err)
		}
	}, func(b *testing.B) {
		for b.Loop() {
			_, err := raw.get(ctx, "model-42", 7)
			require.NoError(b, err)
		}
	})
	compare("record-metrics", func(b *testing.B) {
		for b.Loop() {
			_, err := reg.RecordMetrics(ctx, "model-42@7", map[string]float64{"gsm8k/exact_match": 0.5})
			require.NoError(b, err)
		}
	}, func(b *testing.B) {
		for b.Loop() {
			v, err := raw.get(ctx, "model-42", 7)
			require.NoError(b, err)
			if v.Metrics == nil {
				v.Metrics = map[string]float64{}
			}
			v.Metrics["gsm8k/exact_match"] = 0.5
			require.NoError(b, raw.put(ctx, v))
		}
	})
	_, err := reg.Promote(ctx, "model-42@3", market.StageProduction, market.Promotion{})
	require.NoError(b, err)
	promoted, err := raw.get(ctx, "model-42", 3)
	require.NoError(b, err)
	promoted.Stage = market.StageProduction
	require.NoError(b, raw.put(ctx, promoted))
	compare("resolve-stage", func(b *testing.B) {
		for b.Loop() {
			_, err := reg.Get(ctx, "model-42@production")
			require.NoError(b, err)
		}
	}, func(b *testing.B) {
		for b.Loop() {
			all, err := raw.scan(ctx)
			require.NoError(b, err)
			require.True(b, slices.ContainsFunc(all, func(v market.Version) bool {
				return v.Model == "model-42" && v.Stage == market.StageProduction
			}))
		}
	})
	compare("search-all", func(b *testing.B) {
		for b.Loop() {
			found, err := reg.Search(ctx, market.Query{Tags: []string{"candidate"}, MinMetrics: map[string]float64{"mmlu/acc": 0.5}, OrderBy: "mmlu/acc", Limit: 10})
			require.NoError(b, err)
			require.Len(b, found, 10)
		}
	}, func(b *testing.B) {
		for b.Loop() {
			found, err := search(ctx, raw)
			require.NoError(b, err)
			require.Len(b, found, 10)
		}
	})
}

// boltRaw keeps versions in a bbolt file of its own, opened and closed
// for every operation as FileStore does, and fsynced on every write.
type boltRaw struct{ path string }

var rawBucket = []byte("versions")

func (r boltRaw) open(fn func(db *bolt.DB) error) error {
	db, err := bolt.Open(r.path, 0o600, &bolt.Options{Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	return fn(db)
}

func (r boltRaw) put(_ context.Context, v market.Version) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return r.open(func(db *bolt.DB) error {
		return db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists(rawBucket)
			if err != nil {
				return err
			}
			return bk.Put([]byte(v.Ref()), data)
		})
	})
}

func (r boltRaw) get(_ context.Context, model string, number int) (market.Version, error) {
	var v market.Version
	err := r.open(func(db *bolt.DB) error {
		return db.View(func(tx *bolt.Tx) error {
			data := tx.Bucket(rawBucket).Get([]byte(model + "@" + strconv.Itoa(number)))
			if data == nil {
				return fmt.Errorf("%s@%d not found", model, number)
			}
			return json.Unmarshal(data, &v)
		})
	})
	return v, err
}

func (r boltRaw) scan(context.Context) ([]market.Version, error) {
	var out []market.Version
	err := r.open(func(db *bolt.DB) error {
		return db.View(func(tx *bolt.Tx) error {
			return tx.Bucket(rawBucket).ForEach(func(_, data []byte) error {
				var v market.Version
				if err := json.Unmarshal(data, &v); err != nil {
					return err
				}
				out = append(out, v)
				return nil
			})
		})
	})
	return out, err
}

// kubeRaw keeps versions in ConfigMaps of its own, one each, as JSON.
type kubeRaw struct {
	c  client.Client
	ns string
}

const rawLabel = "bench.cube.dev/raw"

func (r kubeRaw) name(model string, number int) string {
	return "raw-" + market.ConfigMapName(model, number)
}

func (r kubeRaw) put(ctx context.Context, v market.Version) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: r.name(v.Model, v.Number), Namespace: r.ns, Labels: map[string]string{rawLabel: "true"}}}
	_, err = upsert(ctx, r.c, cm, func() { cm.Data = map[string]string{"version": string(data)} })
	return err
}

// upsert creates cm, or updates it when it exists.
func upsert(ctx context.Context, c client.Client, cm *corev1.ConfigMap, mutate func()) (bool, error) {
	existing := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKeyFromObject(cm), existing)
	mutate()
	if err != nil {
		return true, c.Create(ctx, cm)
	}
	existing.Data = cm.Data
	return false, c.Update(ctx, existing)
}

func (r kubeRaw) get(ctx context.Context, model string, number int) (market.Version, error) {
	cm := &corev1.ConfigMap{}
	if err := r.c.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: r.name(model, number)}, cm); err != nil {
		return market.Version{}, err
	}
	var v market.Version
	return v, json.Unmarshal([]byte(cm.Data["version"]), &v)
}

func (r kubeRaw) scan(ctx context.Context) ([]market.Version, error) {
	list := &corev1.ConfigMapList{}
	if err := r.c.List(ctx, list, client.InNamespace(r.ns), client.MatchingLabels{rawLabel: "true"}); err != nil {
		return nil, err
	}
	out := make([]market.Version, 0, len(list.Items))
	for _, cm := range list.Items {
		var v market.Version
		if err := json.Unmarshal([]byte(cm.Data["version"]), &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// BenchmarkFileStore measures the embedded registry with 10,000 versions
// against raw bbolt holding the same versions. Every operation opens and
// closes the file (see FileStore), and every write fsyncs, in both.
func BenchmarkFileStore(b *testing.B) {
	s, err := market.OpenFileStore(b.TempDir() + "/registry.db")
	require.NoError(b, err)
	benchRegistry(b, s, boltRaw{path: b.TempDir() + "/raw.db"}, 10000)
}

// BenchmarkKubernetesStore measures the ConfigMap store on the test API
// server (one etcd on loopback) with 1,000 versions, against ConfigMaps
// written and read directly: filling 10,000 takes minutes at the API
// server's create rate here.
func BenchmarkKubernetesStore(b *testing.B) {
	env := testenv.Get(b)
	ns := env.Namespace(b)
	s, err := market.NewKubernetesStore(env.Client, ns)
	require.NoError(b, err)
	benchRegistry(b, s, kubeRaw{c: env.Client, ns: ns}, 1000)
}
