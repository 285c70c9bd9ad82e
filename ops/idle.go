package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/timebound"
	"github.com/cubestudio/cube/notebook"
)

// Action is what Act does with an idle release.
type Action string

// Actions.
const (
	// Report only lists the release.
	Report Action = "report"
	// ScaleDown scales the release's Deployments and StatefulSets to zero;
	// applying the release again brings them back. A HorizontalPodAutoscaler
	// leaves a target at zero replicas alone. Multi-node services
	// (LeaderWorkerSets) are not scaled: Act reports them as an error.
	ScaleDown Action = "scale-down"
	// Stop stops a notebook with notebook.Stop (its home volume stays), and
	// scales anything else down.
	Stop Action = "stop"
)

// ServingKinds are the cube.dev/kind values of the serve package's engines.
var ServingKinds = []string{"vllm", "sglang", "ollama", "tgi", "triton", "mindie"}

// Policy says when a release is idle: every accelerator sample of every pod
// of a release of one of Kinds stayed under Below percent for the last For.
type Policy struct {
	Name string
	// Kinds are cube.dev/kind values; empty matches every kind.
	Kinds []string
	// Below is the utilisation percent (0–100) every sample stays under.
	Below float64
	// For is the window the release must have been idle for. Releases
	// whose samples start later than a tenth into the window are not
	// judged: too young, or not scraped.
	For time.Duration
	// Action is what Act does (default Report).
	Action Action
}

// ServingIdle is Cube Studio's rule (watch_pod_utilization): serving pods
// that used under 15% of their accelerator for two days, scaled down.
func ServingIdle() Policy {
	return Policy{Name: "serving-under-15%-for-2d", Kinds: ServingKinds, Below: 15, For: 48 * time.Hour, Action: ScaleDown}
}

// NotebookIdle is notebooks whose accelerator stayed under 1% for an hour,
// stopped.
func NotebookIdle() Policy {
	return Policy{Name: "notebook-idle-1h", Kinds: []string{notebook.Kind}, Below: 1, For: time.Hour, Action: Stop}
}

func (p Policy) validate(i int) error {
	var errs []error
	if p.Name == "" {
		errs = append(errs, fmt.Errorf("policies[%d].name: must not be empty", i))
	}
	// Written so that NaN fails: every comparison with NaN is false, and a
	// NaN threshold would judge every release idle.
	if !(p.Below > 0 && p.Below <= 100) {
		errs = append(errs, fmt.Errorf("policies[%d].below: %v must be in (0, 100]", i, p.Below))
	}
	if p.For <= 0 {
		errs = append(errs, fmt.Errorf("policies[%d].for: %s must be positive", i, p.For))
	}
	switch p.Action {
	case "", Report, ScaleDown, Stop:
	default:
		errs = append(errs, fmt.Errorf("policies[%d].action: unknown action %q", i, p.Action))
	}
	return errors.Join(errs...)
}

// Finding is one idle release.
type Finding struct {
	Policy  string
	Action  Action
	Tenant  string
	Release string
	Kind    string
	Pods    []string
	// Mean and Peak utilisation percent over the window.
	Mean, Peak float64
	// Since is the start of the window judged.
	Since time.Time
	// Done says Act carried the action out (false in a dry run).
	Done bool
}

func (f Finding) String() string {
	return fmt.Sprintf("%s/%s (%s): mean %.1f%%, peak %.1f%% since %s → %s", f.Tenant, f.Release, f.Kind, f.Mean, f.Peak,
		f.Since.UTC().Format(time.RFC3339), f.Action)
}

// Idle joins utilisation series to the pods of releases (by namespace and
// pod name; the pods' cube.dev labels name the release and kind) and
// returns the releases each policy finds idle at now, one finding per
// release and policy, sorted by tenant and release. Series of pods cube did
// not make are left out.
//
// A release with a sample in the window that is no utilisation (NaN, an
// infinity, or negative, as npu-exporter's -1 for "not read") is not judged:
// such a sample is under no threshold and would make the release look
// idle. Idle names those releases in its error and still returns the
// findings of the others.
func Idle(series []DeviceSeries, pods []corev1.Pod, now time.Time, policies ...Policy) ([]Finding, error) {
	var errs []error
	if len(policies) == 0 {
		errs = append(errs, errors.New("policies: at least one is needed"))
	}
	errs = append(errs, timebound.Check("now", now))
	for i, p := range policies {
		errs = append(errs, p.validate(i))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("idle: %w", err)
	}
	type rel struct{ ns, name string }
	podRel := map[string]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		if p.Labels[cube.LabelRelease] != "" {
			podRel[p.Namespace+"/"+p.Name] = p
		}
	}
	byRelease := map[rel][]DeviceSeries{}
	kinds := map[rel]string{}
	for _, s := range series {
		p := podRel[s.Namespace+"/"+s.Pod]
		if p == nil {
			continue
		}
		r := rel{p.Namespace, p.Labels[cube.LabelRelease]}
		byRelease[r] = append(byRelease[r], s)
		kinds[r] = p.Labels[cube.LabelKind]
	}
	var out []Finding
	var bad []error
	for _, pol := range policies {
		since := now.Add(-pol.For)
	releases:
		for r, ss := range byRelease {
			if len(pol.Kinds) > 0 && !slices.Contains(pol.Kinds, kinds[r]) {
				continue
			}
			var sum, peak float64
			var n int
			first := now
			podSet := map[string]bool{}
			for _, s := range ss {
				podSet[s.Pod] = true
				for _, smp := range s.Utilisation {
					if smp.At.After(now) {
						continue
					}
					first = earlier(first, smp.At)
					if smp.At.Before(since) {
						continue
					}
					if math.IsNaN(smp.Value) || math.IsInf(smp.Value, 0) || smp.Value < 0 {
						bad = append(bad, fmt.Errorf("policy %s: release %s/%s not judged: pod %s device %s has utilisation %v at %s",
							pol.Name, r.ns, r.name, s.Pod, s.Device, smp.Value, smp.At.UTC().Format(time.RFC3339)))
						continue releases
					}
					sum += smp.Value
					peak = max(peak, smp.Value)
					n++
				}
			}
			if n == 0 || first.After(since.Add(pol.For/10)) || peak >= pol.Below {
				continue
			}
			action := pol.Action
			if action == "" {
				action = Report
			}
			podNames := make([]string, 0, len(podSet))
			for p := range podSet {
				podNames = append(podNames, p)
			}
			slices.Sort(podNames)
			out = append(out, Finding{Policy: pol.Name, Action: action, Tenant: r.ns, Release: r.name, Kind: kinds[r],
				Pods: podNames, Mean: sum / float64(n), Peak: peak, Since: since})
		}
	}
	slices.SortFunc(out, func(a, b Finding) int {
		return strings.Compare(a.Tenant+"/"+a.Release+"/"+a.Policy, b.Tenant+"/"+b.Release+"/"+b.Policy)
	})
	slices.SortFunc(bad, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	if err := errors.Join(bad...); err != nil {
		return out, fmt.Errorf("idle: %w", err)
	}
	return out, nil
}

// ActOption tunes Act. Execute is the one there is.
type ActOption interface{ applyAct(*actConfig) }

type actConfig struct{ execute bool }

type execute struct{}

func (execute) applyAct(c *actConfig) { c.execute = true }

// Execute makes Act carry the actions out; without it Act is a dry run
// that changes nothing.
func Execute() ActOption { return execute{} }

// FieldManager is the field manager of the patches ops sends (scale-downs),
// so that they never take fields cube's apply owns.
const FieldManager = "cube-ops"

// Act carries out the findings' actions through c when Execute is given,
// and returns the findings with Done set for those carried out. Without
// Execute it returns them unchanged: a dry-run report. Errors of single
// releases are joined; the other releases are still acted on.
//
// Findings are checked before anything is done: an action outside Report,
// ScaleDown and Stop, or an acting finding without its tenant or release
// (an empty tenant would select the release in every namespace), makes
// Act refuse the whole list and act on none of it.
func Act(ctx context.Context, c client.Client, findings []Finding, opts ...ActOption) ([]Finding, error) {
	var cfg actConfig
	for _, o := range opts {
		if o != nil {
			o.applyAct(&cfg)
		}
	}
	var invalid []error
	for i, f := range findings {
		switch f.Action {
		case "", Report:
			continue
		case ScaleDown, Stop:
		default:
			invalid = append(invalid, fmt.Errorf("findings[%d].action: unknown action %q (one of %q, %q, %q)", i, f.Action, Report, ScaleDown, Stop))
			continue
		}
		if f.Tenant == "" {
			invalid = append(invalid, fmt.Errorf("findings[%d].tenant: must not be empty", i))
		}
		if f.Release == "" {
			invalid = append(invalid, fmt.Errorf("findings[%d].release: must not be empty", i))
		}
	}
	if err := errors.Join(invalid...); err != nil {
		return slices.Clone(findings), fmt.Errorf("act: nothing done: %w", err)
	}
	out := slices.Clone(findings)
	if !cfg.execute {
		return out, nil
	}
	if c == nil {
		return out, errors.New("act: client: must not be nil")
	}
	var errs []error
	for i := range out {
		f := &out[i]
		if f.Action == Report || f.Action == "" {
			continue
		}
		if err := stopRelease(ctx, c, f.Tenant, f.Release, f.Kind, f.Action); err != nil {
			errs = append(errs, fmt.Errorf("act on %s/%s: %w", f.Tenant, f.Release, err))
			continue
		}
		f.Done = true
	}
	return out, errors.Join(errs...)
}

// stopRelease stops a notebook with notebook.Stop when action is Stop,
// and otherwise scales the release's Deployments and StatefulSets to zero.
func stopRelease(ctx context.Context, c client.Client, namespace, release, kind string, action Action) error {
	if action == Stop && kind == notebook.Kind {
		return notebook.Stop(ctx, c, namespace, release)
	}
	sel := client.MatchingLabels{cube.LabelRelease: release, cube.LabelManagedBy: cube.ManagedBy}
	var deps appsv1.DeploymentList
	if err := c.List(ctx, &deps, client.InNamespace(namespace), sel); err != nil {
		return fmt.Errorf("list deployments: %w", err)
	}
	var sets appsv1.StatefulSetList
	if err := c.List(ctx, &sets, client.InNamespace(namespace), sel); err != nil {
		return fmt.Errorf("list statefulsets: %w", err)
	}
	var objs []client.Object
	for i := range deps.Items {
		objs = append(objs, &deps.Items[i])
	}
	for i := range sets.Items {
		objs = append(objs, &sets.Items[i])
	}
	if len(objs) == 0 {
		return fmt.Errorf("release %s has no deployment or statefulset to scale down", release)
	}
	var errs []error
	for _, o := range objs {
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":0}}`))
		if err := c.Patch(ctx, o, patch, client.FieldOwner(FieldManager)); err != nil {
			errs = append(errs, fmt.Errorf("scale %T %s to zero: %w", o, o.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// WriteFindings writes findings as a table a person reads, saying whether
// each action was carried out or is a dry run. A nil w is an error.
func WriteFindings(w io.Writer, findings []Finding) error {
	if w == nil {
		return errors.New("write findings: w: must not be nil")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tRELEASE\tKIND\tPOLICY\tMEAN%\tPEAK%\tACTION")
	for _, f := range findings {
		state := "dry run"
		if f.Done {
			state = "done"
		}
		if f.Action == Report {
			state = "reported"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f\t%.1f\t%s (%s)\n", f.Tenant, f.Release, f.Kind, f.Policy, f.Mean, f.Peak, f.Action, state)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write findings: %w", err)
	}
	return nil
}
