package train

import (
	"math"
	"slices"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pod"
)

// MPIJob builds a training-operator MPIJob (kubeflow.org/v1): a Launcher
// without accelerators that runs mpirun over Workers, which idle until
// mpirun starts ranks in them through kubectl exec (ServiceAccount reaches
// the Workers only; see LauncherServiceAccount). The command set with
// Command/Args is the program every rank runs; the Launcher wraps it in
// MPIRunCommand (HorovodMPIRunCommand for Horovod) with Workers ×
// SlotsPerWorker ranks. Create one with MPI or Horovod.
//
// Its settings are its own methods below, every pod setting (image,
// command, env, resources, Accelerators, On, Fabric…: go doc pod.Builder)
// and every run-policy setting (CleanPodPolicy, RestartPolicy, Gang,
// TTLAfterFinished, ActiveDeadline, Retry, Suspend: go doc train.RunPolicy
// and go doc train.Lifecycle).
type MPIJob struct {
	pod.Builder[MPIJob]
	RunPolicy[MPIJob]
	roles      roleResources
	workers    int
	slots      *int
	horovod    bool
	mpirunArgs []string
	launcherSA string
}

// MPI starts an MPIJob named name with one Worker.
func MPI(name string) *MPIJob {
	j := &MPIJob{workers: 1}
	initOperator(j, &j.Builder, &j.RunPolicy, "mpijob", name)
	return j
}

// Horovod starts an MPIJob named name for Horovod: the Launcher runs the
// program with Horovod's Open MPI flags (HorovodMPIRunCommand).
func Horovod(name string) *MPIJob {
	j := &MPIJob{workers: 1, horovod: true}
	initOperator(j, &j.Builder, &j.RunPolicy, "horovodjob", name)
	return j
}

// Workers sets the Worker replicas (default 1).
func (j *MPIJob) Workers(n int) *MPIJob {
	if j == nil {
		return nil
	}
	j.workers = n
	return j
}

// LauncherServiceAccount runs the Launcher under the service account name
// instead of the one the operator makes for it.
//
// ServiceAccount (of the pod settings) reaches the Workers only: mpirun in
// the Launcher starts the ranks through `kubectl exec`, and the operator
// grants that (a Role with pods/exec on the job's workers, newLauncherRole in
// pkg/controller.v1/mpi) to the account the Launcher runs as, by default
// <job>-launcher, which it creates. With LauncherServiceAccount the
// operator binds that Role to name instead, and creates name if it does
// not exist, owned by the MPIJob, so that it is deleted with the job: the
// account then holds pods/exec on the workers while the job lives, and an
// account shared with other workloads must exist beforehand.
func (j *MPIJob) LauncherServiceAccount(name string) *MPIJob {
	if j == nil {
		return nil
	}
	j.launcherSA = name
	return j
}

// SlotsPerWorker sets the MPI ranks per Worker. By default it is the
// accelerators per pod, or 1 for pods without accelerators.
func (j *MPIJob) SlotsPerWorker(n int) *MPIJob {
	if j == nil {
		return nil
	}
	j.slots = &n
	return j
}

// MPIRunArgs adds flags to mpirun, placed before the program.
func (j *MPIJob) MPIRunArgs(args ...string) *MPIJob {
	if j == nil {
		return nil
	}
	j.mpirunArgs = append(j.mpirunArgs, args...)
	return j
}

func (j *MPIJob) operator() operator[MPIJob] {
	return operator[MPIJob]{pod: &j.Builder, run: &j.RunPolicy, roles: j.roles}
}

// RoleResources gives one replica role its own CPU and memory (requests =
// limits) in place of the shared CPU and Memory, as TFJob.RoleResources.
func (j *MPIJob) RoleResources(role kubeflowv1.ReplicaType, cpu, memory string) *MPIJob {
	if j == nil {
		return nil
	}
	j.roles.set(role, cpu, memory)
	return j
}

const mpiSpecs = "mpiReplicaSpecs"

func (j *MPIJob) build() (*kubeflowv1.MPIJob, field.ErrorList) {
	if j == nil || unmade(&j.Builder) {
		return nil, unmadeErrors("train.MPIJob", "MPI")
	}
	errs := atLeast(j.workers, 1, replicasPath(mpiSpecs, kubeflowv1.MPIJobReplicaTypeWorker), "worker")
	slots := perPod(j.slots, podspec.Of(&j.Handle).GPUCount())
	switch {
	case slots < 1:
		errs = append(errs, field.Invalid(field.NewPath("spec", "slotsPerWorker"), slots, "must be at least 1"))
	case slots > math.MaxInt32:
		errs = append(errs, field.Invalid(field.NewPath("spec", "slotsPerWorker"), slots, "must fit in 32 bits"))
	}
	command, args := podspec.Of(&j.Handle).CommandLine()
	program := append(command, args...)
	if len(program) == 0 {
		errs = append(errs, field.Required(field.NewPath("spec", mpiSpecs).Key(string(kubeflowv1.MPIJobReplicaTypeLauncher)).
			Child("template", "spec", "containers").Index(0).Child("command"), "the program mpirun runs is required: set Command"))
	}
	if j.launcherSA != "" {
		p := field.NewPath("spec", mpiSpecs).Key(string(kubeflowv1.MPIJobReplicaTypeLauncher)).Child("template", "spec", "serviceAccountName")
		for _, msg := range validation.IsDNS1123Subdomain(j.launcherSA) {
			errs = append(errs, field.Invalid(p, j.launcherSA, msg))
		}
	}
	launch := slices.Concat(j.mpirunArgs, program)
	var launcher []string
	if j.horovod {
		launcher = HorovodMPIRunCommand(max(j.workers, 0)*max(slots, 0), launch...)
	} else {
		launcher = MPIRunCommand(max(j.workers, 0)*max(slots, 0), launch...)
	}
	roles := []role{
		{typ: kubeflowv1.MPIJobReplicaTypeLauncher, replicas: 1, noGPUs: true, override: true, command: launcher,
			ownServiceAccount: true, serviceAccount: j.launcherSA},
		// Workers keep no command: the operator makes them sleep until
		// mpirun reaches them.
		{typ: kubeflowv1.MPIJobReplicaTypeWorker, replicas: max(j.workers, 0), override: true},
	}
	r, renderErrs := j.operator().render(layout{specsField: mpiSpecs, container: kubeflowv1.MPIJobDefaultContainerName, roles: roles})
	errs = append(errs, renderErrs...)
	slots32 := clamp32(slots)
	job := &kubeflowv1.MPIJob{
		TypeMeta:   typeMeta(kubeflowv1.MPIJobKind),
		ObjectMeta: r.meta,
		Spec: kubeflowv1.MPIJobSpec{
			SlotsPerWorker:  &slots32,
			MPIReplicaSpecs: r.replicas,
			MainContainer:   kubeflowv1.MPIJobDefaultContainerName,
			RunPolicy:       r.runPolicy,
		},
	}
	kubeflowv1.SetObjectDefaults_MPIJob(job)
	errs = append(errs, checkPorts(mpiSpecs, job.Spec.MPIReplicaSpecs)...)
	// The operator's validator stops at its first finding and walks a map,
	// so which finding it reports varies run to run; it is only consulted
	// as a backstop once cube's own checks pass.
	if len(errs) == 0 {
		if err := kubeflowv1.ValidateV1MpiJobSpec(&job.Spec); err != nil {
			errs = append(errs, operatorError(err))
		}
	}
	return job, dedupe(errs)
}

// Build validates the settings and returns the MPIJob, or every problem at
// once.
func (j *MPIJob) Build() (*kubeflowv1.MPIJob, error) { return result(j.build()) }

// Objects returns the MPIJob; it implements cube.Workload.
func (j *MPIJob) Objects() ([]client.Object, error) { return objects(j.Build()) }
