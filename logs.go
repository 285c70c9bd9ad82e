package cube

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// LogOption selects which logs Release.Logs streams: Container, Follow,
// TailLines, Since, Previous.
type LogOption interface{ applyToLogs(*logOptions) }

type logOptions struct {
	container string
	follow    bool
	tailLines int64
	since     time.Duration
	previous  bool
}

type containerOption string

func (c containerOption) applyToLogs(o *logOptions) { o.container = string(c) }

// Container names the container whose logs are streamed; without it, the
// pod's default container (the kubectl.kubernetes.io/default-container
// annotation, else the first).
func Container(name string) LogOption { return containerOption(name) }

type tailLinesOption int64

func (n tailLinesOption) applyToLogs(o *logOptions) { o.tailLines = int64(n) }

// TailLines, when n is positive, starts from the last n lines of each pod.
func TailLines(n int64) LogOption { return tailLinesOption(n) }

type sinceOption time.Duration

func (d sinceOption) applyToLogs(o *logOptions) { o.since = time.Duration(d) }

// Since, when d is positive, starts from logs newer than d.
func Since(d time.Duration) LogOption { return sinceOption(d) }

// logFlag is a LogOption that turns one behaviour on.
type logFlag int

const (
	// Follow keeps streaming until ctx ends or the reader is closed.
	Follow logFlag = iota + 1
	// Previous reads the previous, terminated instance of the container
	// (kubectl logs --previous): why a container in CrashLoopBackOff or
	// restarted after an OOM kill stopped. Pods whose container never
	// restarted have no previous logs and are skipped.
	Previous
)

func (f logFlag) applyToLogs(o *logOptions) {
	switch f {
	case Follow:
		o.follow = true
	case Previous:
		o.previous = true
	}
}

// Logs streams the logs of every pod of the release (pods carrying its
// cube.dev/release label), each line prefixed with "[pod-name] ". Pods
// whose container is still waiting for its first start have no logs yet,
// and pods deleted since the list have none left: both are left out, and
// Logs fails only when no pod has any. Lines of one
// pod keep their order; lines of different pods interleave as they arrive.
// Close the reader to stop following.
func (r *Release) Logs(ctx context.Context, options ...LogOption) (io.ReadCloser, error) {
	var opts logOptions
	for _, o := range options {
		if !isNil(o) {
			o.applyToLogs(&opts)
		}
	}
	if err := r.usable(); err != nil {
		return nil, fmt.Errorf("logs: %w", err)
	}
	cs := r.client.clientset
	if cs == nil {
		return nil, errors.New("logs: client has no clientset: build it with cube.New or cube.Clientset")
	}
	pods, err := cs.CoreV1().Pods(r.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{LabelRelease: r.Name}).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("logs: list pods of release %s/%s: %w", r.Namespace, r.Name, err)
	}
	if len(pods.Items) == 0 {
		return nil, fmt.Errorf("logs: release %s/%s has no pods", r.Namespace, r.Name)
	}
	items := slices.Clone(pods.Items)
	slices.SortFunc(items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })

	ctx, cancel := context.WithCancel(ctx)
	streams := make([]io.ReadCloser, 0, len(items))
	var skipped []string                   // pods whose container has not started
	names := make([]string, 0, len(items)) // the pod of each stream
	for i := range items {
		pod := &items[i]
		container := defaultContainer(pod, opts.container)
		if opts.previous && !restarted(pod, container) {
			continue
		}
		// A container that is still waiting to start its first instance
		// (a replacement pod initializing after its job ended, say) has no
		// logs yet; the API server would refuse the whole call.
		if !opts.previous && notStarted(pod, container) {
			skipped = append(skipped, pod.Name)
			continue
		}
		podOpts := &corev1.PodLogOptions{Container: container, Follow: opts.follow, Previous: opts.previous}
		if opts.tailLines > 0 {
			podOpts.TailLines = &opts.tailLines
		}
		if opts.since > 0 {
			secs := int64(opts.since / time.Second)
			podOpts.SinceSeconds = &secs
		}
		s, err := cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, podOpts).Stream(ctx)
		if apierrors.IsNotFound(err) {
			// Deleted since the list (a job's controller cleaning up its
			// pods as the job ends): it has no logs left to read.
			skipped = append(skipped, pod.Name)
			continue
		}
		if err != nil {
			cancel()
			for _, open := range streams {
				open.Close()
			}
			return nil, fmt.Errorf("logs: pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		streams = append(streams, s)
		names = append(names, pod.Name)
	}
	if len(streams) == 0 {
		cancel()
		if len(skipped) > 0 {
			return nil, fmt.Errorf("logs: no container of release %s/%s has logs: not started yet or gone (%s)", r.Namespace, r.Name, strings.Join(skipped, ", "))
		}
		return nil, fmt.Errorf("logs: no container of release %s/%s has restarted, so none has previous logs", r.Namespace, r.Name)
	}

	pr, pw := io.Pipe()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, s := range streams {
		wg.Go(func() {
			defer s.Close()
			prefix := "[" + names[i] + "] "
			sc := bufio.NewScanner(s)
			sc.Buffer(make([]byte, 64*1024), 1024*1024)
			for sc.Scan() {
				mu.Lock()
				_, err := io.WriteString(pw, prefix+sc.Text()+"\n")
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	go func() {
		wg.Wait()
		cancel()
		pw.Close()
	}()
	return &logReader{PipeReader: pr, cancel: cancel}, nil
}

type logReader struct {
	*io.PipeReader
	cancel context.CancelFunc
}

// Close stops every stream.
func (l *logReader) Close() error {
	l.cancel()
	return l.PipeReader.Close()
}

func defaultContainer(pod *corev1.Pod, asked string) string {
	if asked != "" {
		return asked
	}
	if c := pod.Annotations["kubectl.kubernetes.io/default-container"]; c != "" {
		return c
	}
	if len(pod.Spec.Containers) > 0 {
		return pod.Spec.Containers[0].Name
	}
	return ""
}

// notStarted reports whether the container of pod is waiting to start and
// has never run: its status says Waiting and there is no previous instance.
// A pod with no status yet is not known to be waiting.
func notStarted(pod *corev1.Pod, container string) bool {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container {
			return cs.State.Waiting != nil && cs.RestartCount == 0 && cs.LastTerminationState.Terminated == nil
		}
	}
	return false
}

// restarted reports whether the container of pod has a previous instance.
func restarted(pod *corev1.Pod, container string) bool {
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range statuses {
			if cs.Name == container && (cs.RestartCount > 0 || cs.LastTerminationState.Terminated != nil) {
				return true
			}
		}
	}
	return false
}
