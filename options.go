package cube

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/cubestudio/cube/retry"
)

// Option configures a Client made by New or NewFromClient: Namespace,
// Clientset, Kinds, FieldOwner, ApplyParallelism, Retry. The client's
// defaults apply first, then the options in the order given.
type Option interface{ applyToClient(*Client) }

// DefaultApplyParallelism is how many objects of one kind Apply sends to
// the API server at once unless ApplyParallelism says otherwise: as many
// as a program would use applying on its own
// (BenchmarkApply1000Deployments compares the two).
const DefaultApplyParallelism = 8

// DefaultFieldOwner is the field owner of a Client made without
// FieldOwner.
const DefaultFieldOwner = ManagedBy

// defaultRetry is the Retry of a Client unless the Retry option says
// otherwise (its doc gives the values).
var defaultRetry = retry.Policy{Limit: 6, Backoff: 250 * time.Millisecond, Factor: 2, MaxBackoff: 4 * time.Second}

type namespaceOption string

func (ns namespaceOption) applyToClient(c *Client) {
	if msgs := validation.IsDNS1123Label(string(ns)); len(msgs) > 0 {
		c.err = joinErrors(c.err, fmt.Errorf("cube: namespace %q: %s", string(ns), strings.Join(msgs, "; ")))
		return
	}
	c.namespace = string(ns)
}

// Namespace sets the namespace of namespaced objects that do not name one
// (default "default"). A name that is not a DNS-1123 label makes every
// method of the client fail (New fails at once).
func Namespace(ns string) Option { return namespaceOption(ns) }

type clientsetOption struct{ cs kubernetes.Interface }

func (o clientsetOption) applyToClient(c *Client) { c.clientset = o.cs }

// Clientset sets the clientset used for pod logs. New creates one from
// its rest.Config; NewFromClient has none unless this option gives it.
func Clientset(cs kubernetes.Interface) Option { return clientsetOption{cs} }

type kindsOption []Kind

func (ks kindsOption) applyToClient(c *Client) {
	for i, k := range ks {
		switch {
		case k.GroupKind.Kind == "":
			c.err = joinErrors(c.err, fmt.Errorf("cube: Kinds: entry %d has no GroupKind.Kind", i))
		case k.Status == nil:
			c.err = joinErrors(c.err, fmt.Errorf("cube: Kinds: %s has no Status reader (cube.ExistsKind reads a kind Ready once it exists)", kindName(k.GroupKind)))
		default:
			c.kinds = append(c.kinds, k)
		}
	}
}

// Kinds adds kinds the client can read the phase of, besides CoreKinds:
// the workload packages' (train.Kinds(), serve.Kinds(), tenant.Kinds()…),
// all of them at once with kinds.All(), or a Kind of your own for a CRD.
// An object of a kind the client cannot read is Unknown, never Ready, so
// that the same object reads the same phase whatever the program imports.
// A later entry for a group and kind replaces an earlier one; an entry
// without a Kind name or a Status reader makes New fail.
func Kinds(kinds ...Kind) Option { return kindsOption(append([]Kind(nil), kinds...)) }

type fieldOwnerOption string

func (o fieldOwnerOption) applyToClient(c *Client) {
	if err := validOwner(string(o)); err != nil {
		c.err = joinErrors(c.err, err)
		return
	}
	c.owner = string(o)
}

// FieldOwner sets the owner of the fields the client applies (default
// DefaultFieldOwner), so that two services embedding cube do not share
// one. Each release applies as field manager owner:namespace/name, so
// that the API server refuses, as a conflict, an object of one release
// that another release tries to change. An owner must be 1 to 48
// printable ASCII characters without ':' (New fails otherwise).
func FieldOwner(owner string) Option { return fieldOwnerOption(owner) }

func validOwner(owner string) error {
	if owner == "" || len(owner) > 48 {
		return fmt.Errorf("cube: field owner %q: must be 1 to 48 characters", owner)
	}
	for _, r := range owner {
		if r < 0x21 || r > 0x7e || r == ':' {
			return fmt.Errorf("cube: field owner %q: only printable ASCII without spaces or ':'", owner)
		}
	}
	return nil
}

type applyParallelismOption int

func (n applyParallelismOption) applyToClient(c *Client) { c.parallelism = max(int(n), 1) }

// ApplyParallelism sets how many objects of one apply rank (all the
// workloads, all the ConfigMaps…) Apply sends to the API server at once
// (default DefaultApplyParallelism); 1 applies one object at a time, in
// order, stopping at the first failure. Values below 1 count as 1.
func ApplyParallelism(n int) Option { return applyParallelismOption(n) }

type retryOption retry.Policy

func (o retryOption) applyToClient(c *Client) {
	p := retry.Policy(o)
	if err := p.Err(); err != nil {
		c.err = joinErrors(c.err, fmt.Errorf("cube: Retry: %w", err))
		return
	}
	c.retry = p
}

// Retry sets how the client retries a request the API server could not
// serve for a passing reason: a refused, reset or dropped connection, a
// 5xx answer (a 500 only when it says the server's storage failed or
// timed out), or a 429 without Retry-After. The default retries six times
// over about twelve seconds (Backoff 250ms, Factor 2, MaxBackoff 4s), long
// enough for an API server behind a balancer to restart; retry.Policy{}
// retries nothing. A policy with problems (retry.Policy.Err) makes every
// method of the client fail (New fails at once).
//
// client-go already retries, up to ten times and waiting as the server
// asks, every answer that carries Retry-After (429 from priority and
// fairness, 5xx with the header), and a GET whose connection was reset;
// a Client does not retry those again. Every write a Client retries is
// idempotent: server-side apply, a delete (an object already gone counts
// as deleted), the creation of a release record (one that exists is read
// instead).
func Retry(p retry.Policy) Option { return retryOption(p) }

// ApplyOption changes how Apply works: DryRun, Force, NoPrune.
type ApplyOption interface{ applyToApply(*applyOptions) }

type applyOptions struct {
	dryRun  bool
	force   bool
	noPrune bool
}

// applyFlag is an ApplyOption that turns one behaviour on.
type applyFlag int

const (
	// DryRun asks the API server to validate and default everything without
	// storing anything (server-side dry run).
	DryRun applyFlag = iota + 1
	// Force takes ownership of fields that another field manager owns instead
	// of failing with a conflict.
	Force
	// NoPrune keeps the objects that an earlier Apply of the release made
	// and this one no longer has, instead of deleting them; they stay in
	// the release's record, so Release.Delete still removes them.
	NoPrune
)

func (f applyFlag) applyToApply(o *applyOptions) {
	switch f {
	case DryRun:
		o.dryRun = true
	case Force:
		o.force = true
	case NoPrune:
		o.noPrune = true
	}
}

// ReleasesOption narrows what Client.Releases lists: OfKind.
type ReleasesOption interface{ applyToReleases(*releasesOptions) }

type releasesOptions struct{ kind string }

type ofKindOption string

func (k ofKindOption) applyToReleases(o *releasesOptions) { o.kind = string(k) }

// OfKind lists only releases of one builder kind ("pytorchjob", "vllm",
// "tenant"…: Release.Kind).
func OfKind(kind string) ReleasesOption { return ofKindOption(kind) }
