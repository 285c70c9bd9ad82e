package train_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/retry"
	"github.com/cubestudio/cube/train"
)

// TestNilAndZeroBuilders: a builder no constructor made (a nil pointer, a
// zero value, or what a zero value's chained methods return) reports
// itself from Objects and Build instead of panicking.
func TestNilAndZeroBuilders(t *testing.T) {
	cases := []struct {
		name string
		w    cube.Workload
		want string
	}{
		{"nil pytorch", (*train.PyTorchJob)(nil), "train.PyTorchJob has no name and no settings: start it with train.PyTorch(name)"},
		{"zero pytorch", &train.PyTorchJob{}, "train.PyTorchJob has no name and no settings: start it with train.PyTorch(name)"},
		{"zero pytorch chained", (&train.PyTorchJob{}).Image("x"), "train.PyTorchJob has no name and no settings: start it with train.PyTorch(name)"},
		{"nil deepspeed", (*train.DeepSpeedJob)(nil), "train.DeepSpeedJob has no name and no settings: start it with train.DeepSpeed(name)"},
		{"zero deepspeed", &train.DeepSpeedJob{}, "train.DeepSpeedJob has no name and no settings: start it with train.DeepSpeed(name)"},
		{"nil colossalai", (*train.ColossalAIJob)(nil), "train.ColossalAIJob has no name and no settings: start it with train.ColossalAI(name)"},
		{"zero colossalai", (&train.ColossalAIJob{}).Script("t.py"), "train.ColossalAIJob has no name and no settings: start it with train.ColossalAI(name)"},
		{"nil tensorflow", (*train.TFJob)(nil), "train.TFJob has no name and no settings: start it with train.TensorFlow(name)"},
		{"zero tensorflow", (&train.TFJob{}).Workers(2).Chief(), "train.TFJob has no name and no settings: start it with train.TensorFlow(name)"},
		{"nil mpi", (*train.MPIJob)(nil), "train.MPIJob has no name and no settings: start it with train.MPI(name)"},
		{"zero mpi", (&train.MPIJob{}).Workers(2).LauncherServiceAccount("x"), "train.MPIJob has no name and no settings: start it with train.MPI(name)"},
		{"nil paddle", (*train.PaddleJob)(nil), "train.PaddleJob has no name and no settings: start it with train.Paddle(name)"},
		{"zero paddle", (&train.PaddleJob{}).Launch("t.py"), "train.PaddleJob has no name and no settings: start it with train.Paddle(name)"},
		{"nil xgboost", (*train.XGBoostJob)(nil), "train.XGBoostJob has no name and no settings: start it with train.XGBoost(name)"},
		{"zero xgboost", (&train.XGBoostJob{}).Nodes(3), "train.XGBoostJob has no name and no settings: start it with train.XGBoost(name)"},
		{"nil mxnet", (*train.MXNetJob)(nil), "train.MXNetJob has no name and no settings: start it with train.MXNet(name)"},
		{"zero mxnet", (&train.MXNetJob{}).Servers(1), "train.MXNetJob has no name and no settings: start it with train.MXNet(name)"},
		{"nil ray", (*train.RayJob)(nil), "train.RayJob has no name and no settings: start it with train.Ray(name)"},
		{"zero ray", (&train.RayJob{}).Entrypoint("e").WorkerGroup("w", 1).Gang(), "train.RayJob has no name and no settings: start it with train.Ray(name)"},
		{"nil volcano", (*train.VolcanoJob)(nil), "train.VolcanoJob has no name and no settings: start it with train.Volcano(name)"},
		{"zero volcano", (&train.VolcanoJob{}).Plugin(train.PluginSSH).Task("w", 1), "train.VolcanoJob has no name and no settings: start it with train.Volcano(name)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var errs []string
			require.NotPanics(t, func() { errs = errorsOf(t, tc.w) })
			assert.Equal(t, []string{"metadata.name: Required value: a nil or zero " + tc.want}, errs)
		})
	}
	_, err := (*train.PyTorchJob)(nil).Build()
	assert.Error(t, err)
	_, err = (&train.DeepSpeedJob{}).Build()
	assert.Error(t, err)
}

// TestHostileSettings covers wrong input a new user tries, each reported
// once and under the setting that holds it.
func TestHostileSettings(t *testing.T) {
	cases := []struct {
		name string
		w    cube.Workload
		want []string
	}{
		{"a bad queue on every kind of job",
			train.MXNet("mx").Image(img).Gang().Queue("Bad Queue"), []string{
				`queue: Invalid value: "Bad Queue": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			}},
		{"a bad queue on a Volcano job",
			train.Volcano("vc").Image(img).Task("a", 1).Task("b", 1).Queue("Bad Queue"), []string{
				`queue: Invalid value: "Bad Queue": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			}},
		{"a literal token on a Ray cluster's pods",
			train.Ray("ray").Image(img).Entrypoint("python t.py").WorkerGroup("a", 1).WorkerGroup("b", 1).
				Env("OPENAI_API_KEY", "sk-0123456789abcdefghij"), []string{
				`env[OPENAI_API_KEY].value: Forbidden: OPENAI_API_KEY looks like a credential written in clear, which would be stored in the rendered objects: put it in a Secret and use EnvFromSecret("OPENAI_API_KEY", secret, key)`,
			}},
		{"a negative slot count and a GPU count on no profile",
			train.MPI("mpi").Image(img).Command("a").Accelerators(-4).SlotsPerWorker(-1), []string{
				`spec.slotsPerWorker: Invalid value: -1: must be at least 1`,
				`accelerators: Invalid value: -4: must not be negative`,
			}},
		{"more GPUs than a CPU profile has",
			train.PyTorch("pt").Image(img).On(hardware.CPU).Accelerators(2).Nodes(1), []string{
				`accelerators: Invalid value: 2: cpu-amd64 has no accelerators to request`,
			}},
		// Found by FuzzBuilders: each was accepted by cube and refused by
		// the API server.
		{"counts beyond 32 bits",
			train.PyTorch("pt").Image(img).Workers(math.MaxInt32 + 1), []string{
				`spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: 2147483648: must fit in 32 bits`,
			}},
		{"elastic and Volcano counts beyond 32 bits",
			train.Volcano("vc").Image(img).Task("w", math.MaxInt32+1).Retry(retry.Policy{Limit: math.MaxInt32 + 1}), []string{
				`spec.maxRetry: Invalid value: 2147483648: must be at most 2147483646 (Volcano counts the first run too)`,
				`spec.tasks[0].replicas: Invalid value: 2147483648: must fit in 32 bits`,
			}},
		{"a port the operator takes, a port out of range",
			train.PyTorch("pt").Image(img).Nodes(1).Port("mine", 23456).Port("http", 70000), []string{
				`spec.pytorchReplicaSpecs[Master].template.spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive`,
				`spec.pytorchReplicaSpecs[Master].template.spec.containers[0].ports[2].containerPort: Duplicate value: 23456`,
			}},
		{"two ports of one number on a Ray cluster",
			train.Ray("ray").Image(img).Entrypoint("python t.py").WorkerGroup("w", 1).Port("a", 8080).Port("b", 8080), []string{
				`spec.rayClusterSpec.headGroupSpec.template.spec.containers[0].ports[1].containerPort: Duplicate value: 8080: the same in spec.rayClusterSpec.workerGroupSpecs[0]`,
			}},
		{"a bad port and environment variable set once on a job of three roles, reported once",
			train.TensorFlow("tf").Image(img).Chief().ParameterServers(1).Port("http", 70000).Env("BAD NAME", "v"), []string{
				`spec.tfReplicaSpecs[Chief].template.spec.containers[0].env[0].name: Invalid value: "BAD NAME": a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*') (the same in spec.tfReplicaSpecs[PS], spec.tfReplicaSpecs[Worker])`,
				`spec.tfReplicaSpecs[Chief].template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive (the same in spec.tfReplicaSpecs[PS], spec.tfReplicaSpecs[Worker])`,
			}},
		{"the same bad port on the tasks of a Volcano job, reported once",
			train.Volcano("vc").Image(img).Task("a", 1).Task("b", 2).Port("http", 0), []string{
				`spec.tasks[0].template.spec.containers[0].ports[0].containerPort: Invalid value: 0: must be between 1 and 65535, inclusive (the same in spec.tasks[1])`,
			}},
		{"a priority class, a scheduler and a service account that cannot exist",
			train.Volcano("vc").Image(img).Task("w", 1).PriorityClass("Bad_Name").Scheduler("My Scheduler").ServiceAccount("Bad SA"), []string{
				`priorityClass: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
				`scheduler: Invalid value: "My Scheduler": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
				`serviceAccount: Invalid value: "Bad SA": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			}},
		{"a profile whose nodes hold no devices: no count was too many",
			train.PyTorch("pt").Image(img).On(hardware.H100.PerNode(0)).Accelerators(64).Nodes(1), []string{
				`profile.maxPerNode: Invalid value: 0: must be at least 1: how many H100-SXM-80GB devices a node holds (PerNode)`,
			}},
		{"InfiniBand on a CPU profile, reported once for the Master and the Workers",
			train.PyTorch("pt").Image(img).On(hardware.CPU).Fabric(hardware.InfiniBand()).Nodes(4), []string{
				`fabric.kind: Invalid value: "infiniband": cpu-amd64 has no accelerators, so no collective library to carry over RDMA; use TCP or an accelerator profile`,
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, errorsOf(t, tc.w))
		})
	}

	// A secret-named variable is fine from a Secret, as a reference or
	// as a path to a mounted file.
	_, err := train.PyTorch("pt").Image(img).
		EnvFromSecret("HF_TOKEN", pod.SecretKeyRef{Name: "hf", Key: "token"}).
		Env("HF_TOKEN_PATH", "/var/run/secrets/hf/token").
		Env("GIT_TOKEN", "$(HF_TOKEN)").
		Env("PASSWORD_POLICY", "strict").
		Build()
	require.NoError(t, err)
}
