package cubetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cubestudio/cube"
)

// Match chooses the objects a reaction plays the controller of: Kind or
// Release.
type Match struct {
	kind    string
	release string
}

// Kind matches the objects of a kind, by its name ("PyTorchJob") or its
// name and group ("Job.batch", "Job.batch.volcano.sh").
func Kind(kind string) Match { return Match{kind: kind} }

// Release matches every object of the release named name, of every kind
// a controller writes a status to.
func Release(name string) Match { return Match{release: name} }

func (m Match) String() string {
	if m.release != "" {
		return "release " + m.release
	}
	return "kind " + m.kind
}

// check says what is wrong with m: empty, or a kind no status writer
// knows.
func (m Match) check() error {
	switch {
	case m.kind == "" && m.release == "":
		return errors.New("the match is empty: use cubetest.Kind or cubetest.Release")
	case m.release != "":
		return nil
	}
	for gk := range writers {
		if m.kindMatches(gk) {
			return nil
		}
	}
	return fmt.Errorf("no controller writes a status to kind %q: cubetest knows %s", m.kind, strings.Join(writerKinds(), ", "))
}

func (m Match) kindMatches(gk schema.GroupKind) bool {
	name, group, grouped := strings.Cut(m.kind, ".")
	return name == gk.Kind && (!grouped || group == gk.Group)
}

func (m Match) matches(u *unstructured.Unstructured) bool {
	gk := u.GroupVersionKind().GroupKind()
	if !HasStatus(gk) {
		return false
	}
	if m.release != "" {
		return u.GetLabels()[cube.LabelRelease] == m.release
	}
	return m.kindMatches(gk)
}

func writerKinds() []string {
	var out []string
	for gk := range writers {
		out = append(out, gk.Kind)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Reaction is what a controller does to an object it watches: Ready,
// Succeed or FailWith, at once or After a while.
type Reaction struct {
	phase           cube.Phase
	reason, message string
	after           time.Duration
}

// Ready makes the object Ready (a Deployment available, a claim bound);
// a job completes.
func Ready() Reaction { return Reaction{phase: cube.Ready} }

// Succeed makes a run-to-completion object Succeeded and a long-running
// one Ready.
func Succeed() Reaction { return Reaction{phase: cube.Succeeded} }

// FailWith makes the object Failed with the reason and message its
// controller writes ("BackoffLimitExceeded", "OOMKilled"…).
func FailWith(reason, message string) Reaction {
	return Reaction{phase: cube.Failed, reason: reason, message: message}
}

// After delays r by d on the cluster's clock, counted from the object's
// creation. The clock is the cluster's own: it moves on to the next
// reaction due as soon as the cluster has been quiet for a few
// milliseconds, so After(10*time.Minute, …) takes milliseconds and the
// reactions keep their order.
func After(d time.Duration, r Reaction) Reaction {
	r.after += d
	return r
}

// React plays a controller from now on: every object m matches that is
// created after React returns (by Apply, or on Cluster.Fake) goes through
// the reactions in the order of their delays, written by the same status
// writers as Mark. A workload whose pods the cluster refused (its quota,
// its LimitRange, its Pod Security level) is never made Ready or
// Succeeded, as no controller could run it; FailWith still applies. An
// object deleted meanwhile is left alone. React refuses an empty match, a
// kind no controller writes a status to, no reaction and a negative
// delay. Err reports what the reactions met.
func (c *Cluster) React(m Match, rs ...Reaction) error {
	if err := c.usable(); err != nil {
		return err
	}
	if c.admission == nil {
		return errors.New("cubetest: react: the cluster was not made by NewCluster")
	}
	var errs []error
	if err := m.check(); err != nil {
		errs = append(errs, fmt.Errorf("cubetest: react: %w", err))
	}
	if len(rs) == 0 {
		errs = append(errs, fmt.Errorf("cubetest: react to %s: no reaction given", m))
	}
	for i, r := range rs {
		if r.after < 0 {
			errs = append(errs, fmt.Errorf("cubetest: react to %s: reaction %d: negative delay %s", m, i, r.after))
		}
		if r.phase == "" {
			errs = append(errs, fmt.Errorf("cubetest: react to %s: reaction %d is zero: use Ready, Succeed or FailWith", m, i))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	c.admission.reactions.add(m, rs)
	return nil
}

// Err returns the errors the reactions met (an object their status could
// not be written to), joined; nil if none.
func (c *Cluster) Err() error {
	if c == nil || c.admission == nil {
		return nil
	}
	r := &c.admission.reactions
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

// reactions are the registered reactions of a cluster and the clock they
// run on.
type reactions struct {
	cluster *Cluster
	mu      sync.Mutex
	list    []reactor
	errs    []error
	clock   clock
}

type reactor struct {
	match Match
	steps []Reaction
}

func (r *reactions) add(m Match, rs []Reaction) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, reactor{match: m, steps: slices.Clone(rs)})
}

// created schedules the reactions that match u, just created.
func (r *reactions) created(_ context.Context, u *unstructured.Unstructured) {
	r.mu.Lock()
	var steps []Reaction
	for _, re := range r.list {
		if re.match.matches(u) {
			steps = append(steps, re.steps...)
		}
	}
	r.mu.Unlock()
	ref := cube.RefOf(u)
	for _, s := range steps {
		r.clock.at(s.after, func() {
			err := r.cluster.markRef(context.Background(), ref, s.phase, s.reason, s.message, true)
			if err != nil && !apierrors.IsNotFound(err) {
				r.mu.Lock()
				r.errs = append(r.errs, err)
				r.mu.Unlock()
			}
		})
	}
}

// quiet is how long the cluster must see no new reaction before its
// clock moves on: long enough for one Apply to create all its objects.
const quiet = 5 * time.Millisecond

// clock runs scheduled work in the order it is due on a clock of its
// own, which jumps to the next due time once nothing new has been
// scheduled for quiet.
type clock struct {
	mu      sync.Mutex
	now     time.Duration
	seq     int
	queue   []scheduled
	running bool
	kick    chan struct{}
}

type scheduled struct {
	due time.Duration
	seq int
	run func()
}

func (k *clock) at(d time.Duration, run func()) {
	k.mu.Lock()
	k.seq++
	k.queue = append(k.queue, scheduled{due: k.now + d, seq: k.seq, run: run})
	if k.kick == nil {
		k.kick = make(chan struct{}, 1)
	}
	if !k.running {
		k.running = true
		go k.loop()
	}
	k.mu.Unlock()
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

func (k *clock) loop() {
	for {
		select {
		case <-k.kick:
			continue
		case <-time.After(quiet):
		}
		k.mu.Lock()
		if len(k.queue) == 0 {
			k.running = false
			k.mu.Unlock()
			return
		}
		next := 0
		for i, s := range k.queue {
			if s.due < k.queue[next].due || s.due == k.queue[next].due && s.seq < k.queue[next].seq {
				next = i
			}
		}
		s := k.queue[next]
		k.queue = slices.Delete(k.queue, next, next+1)
		k.now = max(k.now, s.due)
		k.mu.Unlock()
		s.run()
	}
}
