package argo

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pipeline"
)

// ScheduleKind is the cube.dev/kind of a pipeline schedule.
const ScheduleKind = "pipeline-schedule"

// maxCronNameLen is Argo's limit on CronWorkflow names
// (workflow/validate: maxCharsInCronWorkflowName): the Workflows it creates
// append a timestamp.
const maxCronNameLen = 52

// ConcurrencyPolicy says what a schedule does when a run is still going at
// the next tick.
type ConcurrencyPolicy string

// Concurrency policies: start the next run beside the one still going,
// skip it, or stop the one going and start the next. They map to the
// CronWorkflow's concurrencyPolicy values of the same names
// (pkg/apis/workflow/v1alpha1/cron_workflow_types.go, ConcurrencyPolicy,
// argo-workflows v3.7.6).
const (
	AllowConcurrent   ConcurrencyPolicy = "Allow"
	ForbidConcurrent  ConcurrencyPolicy = "Forbid"
	ReplaceConcurrent ConcurrencyPolicy = "Replace"
)

// concurrencyPolicies maps each ConcurrencyPolicy to Argo's.
var concurrencyPolicies = map[ConcurrencyPolicy]wfv1.ConcurrencyPolicy{
	AllowConcurrent:   wfv1.AllowConcurrent,
	ForbidConcurrent:  wfv1.ForbidConcurrent,
	ReplaceConcurrent: wfv1.ReplaceConcurrent,
}

// CronWorkflowBuilder runs a pipeline on a cron schedule: it compiles to
// an Argo CronWorkflow named after the pipeline. It is a cube.Workload;
// apply either the Workflow (one run) or the CronWorkflow.
type CronWorkflowBuilder struct {
	p                *pipeline.Pipeline
	executorRBAC     bool
	crons            []string
	timezone         string
	concurrency      ConcurrencyPolicy
	startingDeadline *time.Duration
	keepSucceeded    *int
	keepFailed       *int
	suspend          bool
}

// CronWorkflow returns a schedule that runs p at each of the cron
// expressions (five fields, or a descriptor such as @daily or @every 1h).
// The schedule reads p when it is built, so later changes to p are
// included.
func CronWorkflow(p *pipeline.Pipeline, cron ...string) *CronWorkflowBuilder {
	return &CronWorkflowBuilder{p: p, crons: slices.Clone(cron)}
}

// ExecutorRBAC makes Objects also render the executor's service account,
// Role and RoleBinding, as WorkflowBuilder.ExecutorRBAC does.
func (s *CronWorkflowBuilder) ExecutorRBAC() *CronWorkflowBuilder {
	if s != nil {
		s.executorRBAC = true
	}
	return s
}

// Timezone sets the IANA time zone of the cron expressions (default: the
// Argo controller's).
func (s *CronWorkflowBuilder) Timezone(tz string) *CronWorkflowBuilder {
	if s != nil {
		s.timezone = tz
	}
	return s
}

// ConcurrencyPolicy sets what happens when a run is still going at the next
// tick (CronWorkflow's concurrencyPolicy). It is not a parallelism bound.
func (s *CronWorkflowBuilder) ConcurrencyPolicy(policy ConcurrencyPolicy) *CronWorkflowBuilder {
	if s != nil {
		s.concurrency = policy
	}
	return s
}

// StartingDeadline skips a run that could not start within d of its time.
func (s *CronWorkflowBuilder) StartingDeadline(d time.Duration) *CronWorkflowBuilder {
	if s != nil {
		s.startingDeadline = &d
	}
	return s
}

// KeepHistory keeps the last succeeded and failed Workflows.
func (s *CronWorkflowBuilder) KeepHistory(succeeded, failed int) *CronWorkflowBuilder {
	if s == nil {
		return nil
	}
	s.keepSucceeded, s.keepFailed = &succeeded, &failed
	return s
}

// Suspend stops (true) or resumes (false) scheduling.
func (s *CronWorkflowBuilder) Suspend(on bool) *CronWorkflowBuilder {
	if s != nil {
		s.suspend = on
	}
	return s
}

// Build compiles the schedule to a fresh Argo CronWorkflow.
func (s *CronWorkflowBuilder) Build() (*wfv1.CronWorkflow, error) {
	cw, _, err := s.build()
	return cw, err
}

func (s *CronWorkflowBuilder) build() (*wfv1.CronWorkflow, []client.Object, error) {
	if s == nil {
		return nil, nil, errNilPipeline
	}
	spec, aux, errs, err := compileSpec(s.p, s.executorRBAC)
	if err != nil {
		return nil, nil, err
	}
	errs = append(errs, s.validate()...)
	if len(errs) > 0 {
		return nil, nil, errs.ToAggregate()
	}
	id := podspec.Of(&s.p.Handle).Identity()
	id.Kind = ScheduleKind
	cw := &wfv1.CronWorkflow{
		TypeMeta:   metav1.TypeMeta{APIVersion: workflowVersion, Kind: "CronWorkflow"},
		ObjectMeta: podspec.Of(&s.p.Handle).ObjectMeta(podspec.Of(&s.p.Handle).Name()),
		Spec: wfv1.CronWorkflowSpec{
			WorkflowSpec:      spec,
			Schedules:         slices.Clone(s.crons),
			Timezone:          s.timezone,
			ConcurrencyPolicy: concurrencyPolicies[s.concurrency],
			Suspend:           s.suspend,
			WorkflowMetadata:  &metav1.ObjectMeta{Labels: podspec.Of(&s.p.Handle).ObjectMeta(podspec.Of(&s.p.Handle).Name()).Labels},
		},
	}
	for k, v := range id.Labels() {
		cw.Labels[k] = v
	}
	if d := s.startingDeadline; d != nil {
		secs := int64(math.Ceil(d.Seconds()))
		cw.Spec.StartingDeadlineSeconds = &secs
	}
	if s.keepSucceeded != nil {
		a, b := int32(*s.keepSucceeded), int32(*s.keepFailed)
		cw.Spec.SuccessfulJobsHistoryLimit, cw.Spec.FailedJobsHistoryLimit = &a, &b
	}
	return cw, aux, nil
}

// Objects compiles the schedule: the executor's RBAC (ExecutorRBAC), the
// objects workload steps create around their jobs and the CronWorkflow.
func (s *CronWorkflowBuilder) Objects() ([]client.Object, error) {
	cw, extra, err := s.build()
	if err != nil {
		return nil, err
	}
	return append(extra, cw), nil
}

func (s *CronWorkflowBuilder) validate() field.ErrorList {
	var errs field.ErrorList
	if name := podspec.Of(&s.p.Handle).Name(); len(name) > maxCronNameLen {
		errs = append(errs, field.TooLong(field.NewPath("metadata", "name"), name, maxCronNameLen))
	}
	sp := field.NewPath("schedule")
	if len(s.crons) == 0 {
		errs = append(errs, field.Required(sp, "at least one cron expression is required"))
	}
	for i, c := range s.crons {
		if err := validateCron(c); err != nil {
			errs = append(errs, field.Invalid(sp.Index(i), c, err.Error()))
		}
	}
	if s.timezone != "" {
		if _, err := time.LoadLocation(s.timezone); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("timezone"), s.timezone, "unknown time zone"))
		}
	}
	switch s.concurrency {
	case "", AllowConcurrent, ForbidConcurrent, ReplaceConcurrent:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("concurrencyPolicy"), s.concurrency,
			[]ConcurrencyPolicy{AllowConcurrent, ForbidConcurrent, ReplaceConcurrent}))
	}
	if d := s.startingDeadline; d != nil && *d < 0 {
		errs = append(errs, field.Invalid(field.NewPath("startingDeadline"), d.String(), "must not be negative"))
	}
	if s.keepSucceeded != nil {
		for _, h := range []struct {
			name string
			v    int
		}{{"succeeded", *s.keepSucceeded}, {"failed", *s.keepFailed}} {
			if h.v < 0 || h.v > math.MaxInt32 {
				errs = append(errs, field.Invalid(field.NewPath("keepHistory", h.name), h.v, "must be between 0 and 2^31-1"))
			}
		}
	}
	return errs
}

// cronField is the range of one field of a five-field cron expression.
type cronField struct {
	name     string
	min, max int
	names    []string // names for min, min+1, …
}

var cronFields = []cronField{
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day of month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
	{name: "day of week", min: 0, max: 6, names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
}

// validateCron accepts what Argo's controller parses (robfig/cron's
// ParseStandard): five fields of values, ranges, lists, steps, '*', '?' and
// month/day names, or a descriptor (@yearly, @annually, @monthly, @weekly,
// @daily, @midnight, @hourly, @every DURATION), optionally prefixed by
// TZ=zone or CRON_TZ=zone.
func validateCron(spec string) error {
	spec = strings.TrimSpace(spec)
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		tz, rest, ok := strings.Cut(spec, " ")
		if !ok {
			return fmt.Errorf("a time zone prefix needs a schedule after it")
		}
		_, zone, _ := strings.Cut(tz, "=")
		if _, err := time.LoadLocation(zone); err != nil {
			return fmt.Errorf("unknown time zone %q", zone)
		}
		spec = strings.TrimSpace(rest)
	}
	if strings.HasPrefix(spec, "@") {
		if d, ok := strings.CutPrefix(spec, "@every "); ok {
			dur, err := time.ParseDuration(strings.TrimSpace(d))
			if err != nil || dur <= 0 {
				return fmt.Errorf("@every needs a positive duration, e.g. @every 1h30m")
			}
			return nil
		}
		switch spec {
		case "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly":
			return nil
		}
		return fmt.Errorf("unknown descriptor %q", spec)
	}
	fields := strings.Fields(spec)
	if len(fields) != len(cronFields) {
		return fmt.Errorf("want 5 fields (minute hour day-of-month month day-of-week), got %d", len(fields))
	}
	for i, f := range fields {
		if err := cronFields[i].validate(f); err != nil {
			return fmt.Errorf("%s: %w", cronFields[i].name, err)
		}
	}
	return nil
}

func (cf cronField) validate(field string) error {
	for part := range strings.SplitSeq(field, ",") {
		rng, step, hasStep := strings.Cut(part, "/")
		if hasStep {
			n, err := strconv.Atoi(step)
			if err != nil || n <= 0 {
				return fmt.Errorf("bad step %q", step)
			}
		}
		if rng == "*" || rng == "?" {
			continue
		}
		lo, hi, isRange := strings.Cut(rng, "-")
		a, err := cf.value(lo)
		if err != nil {
			return err
		}
		if !isRange {
			continue
		}
		b, err := cf.value(hi)
		if err != nil {
			return err
		}
		if a > b {
			return fmt.Errorf("range %q runs backwards", rng)
		}
	}
	return nil
}

func (cf cronField) value(s string) (int, error) {
	if i := slices.Index(cf.names, strings.ToUpper(s)); i >= 0 {
		return cf.min + i, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("bad value %q", s)
	}
	if n < cf.min || n > cf.max {
		return 0, fmt.Errorf("%d is outside %d-%d", n, cf.min, cf.max)
	}
	return n, nil
}
