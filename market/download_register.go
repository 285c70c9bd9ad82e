package market

// What a finished download reports, and its registration.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cubestudio/cube/internal/podspec"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DownloadSummary is what a finished download pod reports.
type DownloadSummary struct {
	Bytes    int64  `json:"bytes"`
	Checksum string `json:"checksum"`
}

// ParseDownloadSummary reads a download pod's termination message.
func ParseDownloadSummary(message string) (DownloadSummary, error) {
	var s DownloadSummary
	dec := json.NewDecoder(strings.NewReader(message))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return DownloadSummary{}, fmt.Errorf("parse download summary: %w", err)
	}
	var errs field.ErrorList
	if s.Bytes < 0 {
		errs = append(errs, field.Invalid(field.NewPath("bytes"), s.Bytes, "must not be negative"))
	}
	if s.Checksum != "" && !validChecksum(s.Checksum) {
		errs = append(errs, field.Invalid(field.NewPath("checksum"), s.Checksum, checksumMessage))
	}
	if len(errs) > 0 {
		return DownloadSummary{}, fmt.Errorf("parse download summary: %w", errs.ToAggregate())
	}
	return s, nil
}

// ErrNotFinished is returned (wrapped) when a Job has not succeeded yet.
var ErrNotFinished = errors.New("job has not succeeded")

// jobSummary returns the termination message of the container of the
// succeeded pod of Job name.
func jobSummary(ctx context.Context, c client.Client, namespace, name, container string) (*batchv1.Job, string, error) {
	job := &batchv1.Job{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, job); err != nil {
		return nil, "", fmt.Errorf("get job %s/%s: %w", namespace, name, err)
	}
	if !jobSucceeded(job) {
		return job, "", fmt.Errorf("job %s/%s: %w", namespace, name, ErrNotFinished)
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{batchv1.JobNameLabel: name}); err != nil {
		return job, "", fmt.Errorf("list pods of job %s/%s: %w", namespace, name, err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == container && cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 {
				return job, cs.State.Terminated.Message, nil
			}
		}
	}
	return job, "", fmt.Errorf("job %s/%s succeeded but no pod of it reports container %q's result (pods deleted?)", namespace, name, container)
}

func jobSucceeded(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// RegisterDownload registers the model a succeeded download Job fetched:
// a new version of the model Register named, with the artifact on the
// claim, its size and checksum from the pod's summary, and the source
// (with its revision) as the base model. Called again for the same Job it
// returns the version already registered instead of a second one.
func RegisterDownload(ctx context.Context, c client.Client, reg *Registry, d *DownloadJob) (Version, error) {
	if d == nil {
		return Version{}, errors.New("market: DownloadJob is nil")
	}
	if c == nil || isNilValue(c) {
		return Version{}, errors.New("market: RegisterDownload needs a client")
	}
	if err := reg.usable(); err != nil {
		return Version{}, err
	}
	want, err := d.Build()
	if err != nil {
		return Version{}, err
	}
	ns := podspec.Of(&d.Handle).NamespaceName()
	job, message, err := jobSummary(ctx, c, ns, podspec.Of(&d.Handle).Name(), "download")
	if err != nil {
		return Version{}, err
	}
	summary, err := ParseDownloadSummary(message)
	if err != nil {
		return Version{}, fmt.Errorf("job %s/%s: %w", ns, podspec.Of(&d.Handle).Name(), err)
	}
	base := d.uri
	if rev := want.Annotations[AnnotationRevision]; rev != "" {
		base, _, _ = strings.Cut(base, "@")
		base += "@" + rev
	}
	v := Version{
		Model: d.model,
		Artifact: Artifact{
			URI: d.target(), Format: d.format, DType: d.dtype,
			SizeBytes: summary.Bytes, Checksum: summary.Checksum,
		},
		Lineage:     Lineage{BaseModel: base},
		Description: "downloaded from " + base + " by Job " + job.Name,
	}
	existing, err := reg.Versions(ctx, d.model)
	if err != nil {
		return Version{}, err
	}
	for _, e := range existing {
		if e.Artifact == v.Artifact {
			return e, nil
		}
	}
	return reg.Register(ctx, v)
}
