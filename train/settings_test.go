package train_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/retry"
	"github.com/cubestudio/cube/train"
)

// Objects computes its defaults (the image's entrypoint, the process count,
// the clean-pod policy…) into locals: a builder rendered many times is
// still equal, field by field, to a twin made the same way and never
// rendered. Every builder of every case, in every hardware setup.
func TestObjectsNeverChangeTheBuilder(t *testing.T) {
	for _, bc := range builderCases {
		for _, s := range setups {
			t.Run(bc.name+"/"+s.name, func(t *testing.T) {
				rendered, twin := bc.build(bc.name, s), bc.build(bc.name, s)
				require.True(t, reflect.DeepEqual(rendered, twin), "two builders made alike differ before rendering")
				for range 3 {
					_, err := rendered.Objects()
					require.NoError(t, err)
				}
				assert.True(t, reflect.DeepEqual(rendered, twin), "Objects changed the builder")
			})
		}
	}
	// A builder whose rendering fails is not changed either.
	bad, twin := train.DeepSpeed("ds").Image(img).Workers(-1), train.DeepSpeed("ds").Image(img).Workers(-1)
	_, err := bad.Objects()
	require.Error(t, err)
	assert.True(t, reflect.DeepEqual(bad, twin), "a failed Objects changed the builder")
}

// DeepSpeed and ColossalAI render a PyTorchJob: the problems of that job
// keep their own field paths beside those of the outer settings, one error
// each, not one string.
func TestNestedPyTorchJobKeepsFieldPaths(t *testing.T) {
	ds := train.DeepSpeed("ds").Image(img).Workers(-1).Config(train.DeepSpeedConfig{MicroBatchPerGPU: 0}).
		ElasticRetry(retry.Policy{Limit: 1})
	assert.Equal(t, []string{
		`deepspeedConfig.train_micro_batch_size_per_gpu: Invalid value: 0: must be at least 1`,
		`spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: -1: must not be negative`,
		`spec.elasticPolicy: Forbidden: rendezvous settings and ElasticRetry need Elastic(min, max)`,
	}, errorsOf(t, ds))
	cai := train.ColossalAI("cai").Image(img).Nodes(0).Plugin("fsdp")
	assert.Equal(t, []string{
		`script: Required value: a training script is required: call Script`,
		`plugin: Unsupported value: "fsdp": supported values: "torch_ddp", "low_level_zero", "gemini", "hybrid_parallel"`,
		`spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: -1: Nodes(0) leaves no pod: Nodes counts the Master, so it is at least 1`,
	}, errorsOf(t, cai))
}

// Retry carries what each engine has a field for and refuses the rest by
// name: the training-operator, KubeRay, torchrun and Volcano count retries
// but none waits by a setting of its own or stops after a time.
func TestRetryMapsToEachEngine(t *testing.T) {
	every := retry.Policy{Limit: 2, Backoff: time.Second, Factor: 2, MaxBackoff: time.Minute, MaxDuration: time.Hour}
	refused := func(setting, engine string) []string {
		return []string{
			setting + `.backoff: Forbidden: ` + engine + ` has no wait between retries of its own: leave Backoff zero`,
			setting + `.factor: Forbidden: ` + engine + ` has no growing wait between retries: leave Factor zero`,
			setting + `.maxBackoff: Forbidden: ` + engine + ` has no cap on the wait between retries: leave MaxBackoff zero`,
			setting + `.maxDuration: Forbidden: ` + engine + ` has no time after which retries stop (ActiveDeadline bounds a whole run): leave MaxDuration zero`,
		}
	}
	assert.Equal(t, refused("retry", "the training-operator"), errorsOf(t, pytorch().Retry(every)))
	assert.Equal(t, refused("retry", "KubeRay"), errorsOf(t, train.Ray("ray").Image(img).Entrypoint("e").WorkerGroup("w", 1).Retry(every)))
	assert.Equal(t, refused("elasticRetry", "torchrun"), errorsOf(t, pytorch().Elastic(1, 2).ElasticRetry(every)))
	assert.Equal(t, refused("retry", "Volcano"), errorsOf(t, train.Volcano("vc").Image(img).Task("w", 1).Retry(every)))
	assert.Equal(t, refused("spec.tasks[0].retry", "Volcano"),
		errorsOf(t, train.Volcano("vc").Image(img).AddTask(train.VolcanoTask{Name: "w", Replicas: 1, Retry: &every})))

	// A bad value is reported where the engine keeps the count, the others
	// under the setting.
	assert.Equal(t, []string{
		`spec.runPolicy.backoffLimit: Invalid value: -1: must not be negative`,
		`retry.backoff: Invalid value: "-1s": must not be negative`,
	}, errorsOf(t, pytorch().Retry(retry.Policy{Limit: -1, Backoff: -time.Second})))

	// A constant factor of 1 is no growing wait.
	job, err := pytorch().Retry(retry.Policy{Limit: 3, Factor: 1}).Build()
	require.NoError(t, err)
	assert.Equal(t, int32(3), *job.Spec.RunPolicy.BackoffLimit)
	elastic, err := pytorch().Elastic(1, 2).ElasticRetry(retry.Policy{Limit: 4}).Retry(retry.Policy{Limit: 1}).Build()
	require.NoError(t, err)
	assert.Equal(t, int32(4), *elastic.Spec.ElasticPolicy.MaxRestarts, "torchrun's restarts in place")
	assert.Equal(t, int32(1), *elastic.Spec.RunPolicy.BackoffLimit, "the pods' restarts after torchrun gave up")
	ray, err := train.Ray("ray").Image(img).Entrypoint("e").WorkerGroup("w", 1).Retry(retry.Policy{Limit: 2}).Build()
	require.NoError(t, err)
	assert.Equal(t, int32(2), *ray.Spec.BackoffLimit)
	never, err := train.Volcano("vc").Image(img).AddTask(train.VolcanoTask{Name: "w", Replicas: 1, Retry: &retry.Policy{}}).Retry(retry.Policy{}).Build()
	require.NoError(t, err)
	assert.Equal(t, int32(1), never.Spec.MaxRetry, "Volcano counts the first run: 1 runs once")
	assert.Equal(t, int32(1), never.Spec.Tasks[0].MaxRetry, "a task fails at its first restart")
	unset, err := train.Volcano("vc").Image(img).Task("w", 1).Build()
	require.NoError(t, err)
	assert.Zero(t, unset.Spec.MaxRetry, "unset leaves Volcano's default")
}

// The Ray head takes the workers' accelerators or none.
func TestRayHeadAccelerators(t *testing.T) {
	ray := func() *train.RayJob {
		return train.Ray("ray").Image(img).Entrypoint("e").WorkerGroup("w", 1).On(hardware.H100).Accelerators(4)
	}
	for n, want := range map[int]string{0: "0", 4: "4"} {
		job, err := ray().HeadAccelerators(n).Build()
		require.NoError(t, err)
		q := job.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]
		assert.Equal(t, want, qstr(q))
	}
	assert.Equal(t, []string{
		`spec.rayClusterSpec.headGroupSpec.template.spec.containers[0].resources: Invalid value: 2: the head takes the workers' accelerators (4) or none`,
	}, errorsOf(t, ray().HeadAccelerators(2)))
}
