package ops

import (
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/timebound"
	"github.com/cubestudio/cube/vgpu"
)

// Key is what usage is grouped by: the tenant (the namespace, as
// cube.Tenant makes one per team), the release and builder kind (the
// cube.dev/release and cube.dev/kind labels every cube object carries), the
// accelerator (a hardware profile name, or the resource when no profile
// matches) and the kind of share.
type Key struct {
	Tenant      string
	Release     string
	Kind        string
	Accelerator string
	Share       vgpu.Kind
}

// Record is the usage of one Key over the report's range.
type Record struct {
	Key
	// DeviceHours is device-equivalents times hours: a pod on two whole
	// GPUs for an hour is 2, a quarter slice for four hours is 1.
	DeviceHours float64
	// Pods is how many pods contributed.
	Pods int
}

// Usage is accelerator use over [From, To).
type Usage struct {
	From, To time.Time
	// Records are sorted by tenant, release, kind, accelerator and share.
	Records []Record
}

// UsageOption tunes Accounting: Profiles, Inventory.
type UsageOption interface{ applyUsage(*usageConfig) }

type usageOptionFunc func(*usageConfig)

func (f usageOptionFunc) applyUsage(c *usageConfig) { f(c) }

type usageConfig struct {
	profiles []hardware.Profile
	nodes    map[string]hardware.Profile
}

// Profiles replaces the profiles pods are matched against (by their
// node selectors: nvidia.com/gpu.product, node.kubernetes.io/npu.chip.name,
// or HAMi's nvidia.com/use-gputype annotation). The default is
// hardware.Catalogue().
func Profiles(profiles ...hardware.Profile) UsageOption {
	return usageOptionFunc(func(c *usageConfig) { c.profiles = slices.Clone(profiles) })
}

// Inventory names the profile of each node's devices from a
// hardware.Inventory, so that a pod bound to a node is counted under the
// device the node has even when it selected none.
func Inventory(inv hardware.Inventory) UsageOption {
	return usageOptionFunc(func(c *usageConfig) {
		for _, n := range inv.Nodes {
			if n.Profile.Accelerated() {
				c.nodes[n.Name] = n.Profile
			}
		}
	})
}

// Accounting computes device-hours of pods over [from, to). A pod is
// counted from its start (status.startTime) to the last of its containers'
// finish times when it ended, to its deletion timestamp when it is being
// deleted, else to to; the part outside the range is left out. Pods that
// never started, and pods that ask for no accelerator, count nothing.
// Every container's share is read with vgpu.RequestShare; init containers
// are left out, because they run before the others and do not hold their
// devices for the pod's life.
func Accounting(pods []corev1.Pod, from, to time.Time, opts ...UsageOption) (*Usage, error) {
	var errs []error
	// A placeholder end such as year 9999 would count every running pod
	// for millennia.
	errs = append(errs, timebound.Check("from", from), timebound.Check("to", to))
	if !to.After(from) {
		errs = append(errs, fmt.Errorf("to: %s must be after from %s", to.Format(time.RFC3339), from.Format(time.RFC3339)))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	cfg := usageConfig{profiles: hardware.Catalogue(), nodes: map[string]hardware.Profile{}}
	for _, o := range opts {
		if o != nil {
			o.applyUsage(&cfg)
		}
	}
	m := newMatcher(cfg)
	acc := map[Key]*Record{}
	for i := range pods {
		pod := &pods[i]
		start, end, ok := lifetime(pod, to)
		if !ok {
			continue
		}
		start, end = later(start, from), earlier(end, to)
		if !end.After(start) {
			continue
		}
		hours := end.Sub(start).Hours()
		prof := m.profile(pod)
		counted := map[Key]bool{}
		for _, c := range pod.Spec.Containers {
			share, ok := vgpu.RequestShare(containerResources(c), prof)
			if !ok {
				continue
			}
			k := Key{
				Tenant:      pod.Namespace,
				Release:     pod.Labels[cube.LabelRelease],
				Kind:        pod.Labels[cube.LabelKind],
				Accelerator: accelerator(prof, share),
				Share:       share.Kind,
			}
			r := acc[k]
			if r == nil {
				r = &Record{Key: k}
				acc[k] = r
			}
			r.DeviceHours += share.Accelerators * hours
			if !counted[k] {
				r.Pods++
				counted[k] = true
			}
		}
	}
	u := &Usage{From: from, To: to, Records: make([]Record, 0, len(acc))}
	for _, r := range acc {
		u.Records = append(u.Records, *r)
	}
	slices.SortFunc(u.Records, func(a, b Record) int { return compareKeys(a.Key, b.Key) })
	return u, nil
}

// ReadUsage lists the pods cube manages (app.kubernetes.io/managed-by=cube)
// through c and computes their usage over [from, to). opts narrow the list
// (client.InNamespace for one tenant); usage options follow as
// UsageOptions. Pods the cluster no longer keeps are not counted: a report
// over a longer past reads a recorded pod list with Accounting.
func ReadUsage(ctx context.Context, c client.Reader, from, to time.Time, list []client.ListOption, opts ...UsageOption) (*Usage, error) {
	if c == nil {
		return nil, errors.New("read usage: client: must not be nil")
	}
	var pods corev1.PodList
	listOpts := append([]client.ListOption{client.MatchingLabels{cube.LabelManagedBy: cube.ManagedBy}}, list...)
	if err := c.List(ctx, &pods, listOpts...); err != nil {
		return nil, fmt.Errorf("read usage: list pods: %w", err)
	}
	return Accounting(pods.Items, from, to, opts...)
}

func compareKeys(a, b Key) int {
	return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Release, b.Release), cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Accelerator, b.Accelerator), cmp.Compare(a.Share, b.Share))
}

// containerResources merges limits over requests: extended resources are
// limits, and a request without a limit still holds the device.
func containerResources(c corev1.Container) corev1.ResourceList {
	if len(c.Resources.Requests) == 0 {
		return c.Resources.Limits
	}
	res := maps.Clone(c.Resources.Requests)
	maps.Copy(res, c.Resources.Limits)
	return res
}

// lifetime is when the pod held its devices, with now standing in for the
// end of a pod still running.
func lifetime(pod *corev1.Pod, now time.Time) (start, end time.Time, ok bool) {
	if pod.Status.StartTime == nil {
		return time.Time{}, time.Time{}, false
	}
	start, end = pod.Status.StartTime.Time, now
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		var last time.Time
		for _, cs := range pod.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.FinishedAt.After(last) {
				last = t.FinishedAt.Time
			}
		}
		if !last.IsZero() {
			end = last
		}
	}
	if d := pod.DeletionTimestamp; d != nil && d.Time.Before(end) {
		end = d.Time
	}
	return start, end, true
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// accelerator names the device of a share: the profile when one matched,
// else the resource.
func accelerator(p hardware.Profile, s vgpu.Share) string {
	if p.Accelerated() {
		return p.Name
	}
	return string(s.Resource)
}

// Totals sums device-hours per accelerator, over every record or those of
// one tenant when tenant is not empty.
func (u *Usage) Totals(tenant string) map[string]float64 {
	out := map[string]float64{}
	if u == nil {
		return out
	}
	for _, r := range u.Records {
		if tenant == "" || r.Tenant == tenant {
			out[r.Accelerator] += r.DeviceHours
		}
	}
	return out
}

// Tenant returns the usage of one tenant: a fresh Usage with its records.
func (u *Usage) Tenant(name string) *Usage {
	if u == nil {
		return &Usage{}
	}
	out := &Usage{From: u.From, To: u.To}
	for _, r := range u.Records {
		if r.Tenant == name {
			out.Records = append(out.Records, r)
		}
	}
	return out
}

// csvHeader is the first row WriteCSV writes.
var csvHeader = []string{"tenant", "release", "kind", "accelerator", "share", "device_hours", "pods", "from", "to"}

// WriteCSV writes one row per record under a header row: tenant, release,
// kind, accelerator, share, device_hours (four decimals), pods, from, to
// (RFC 3339). A nil usage or w is an error.
func (u *Usage) WriteCSV(w io.Writer) error {
	if u == nil {
		return errors.New("write usage csv: usage is nil")
	}
	if w == nil {
		return errors.New("write usage csv: w: must not be nil")
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return fmt.Errorf("write usage csv: %w", err)
	}
	from, to := u.From.UTC().Format(time.RFC3339), u.To.UTC().Format(time.RFC3339)
	for _, r := range u.Records {
		row := []string{r.Tenant, r.Release, r.Kind, r.Accelerator, string(r.Share),
			strconv.FormatFloat(r.DeviceHours, 'f', 4, 64), strconv.Itoa(r.Pods), from, to}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("write usage csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write usage csv: %w", err)
	}
	return nil
}

// WriteTable writes the records as aligned columns a person reads, with a
// total per accelerator at the end. A nil usage or w is an error.
func (u *Usage) WriteTable(w io.Writer) error {
	if u == nil {
		return errors.New("write usage table: usage is nil")
	}
	if w == nil {
		return errors.New("write usage table: w: must not be nil")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "usage %s to %s\n", u.From.UTC().Format(time.RFC3339), u.To.UTC().Format(time.RFC3339))
	fmt.Fprintln(tw, "TENANT\tRELEASE\tKIND\tACCELERATOR\tSHARE\tDEVICE-HOURS\tPODS")
	for _, r := range u.Records {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.2f\t%d\n", r.Tenant, orDash(r.Release), orDash(r.Kind), r.Accelerator, r.Share, r.DeviceHours, r.Pods)
	}
	totals := u.Totals("")
	for _, acc := range slices.Sorted(maps.Keys(totals)) {
		fmt.Fprintf(tw, "total\t\t\t%s\t\t%.2f\t\n", acc, totals[acc])
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write usage table: %w", err)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
