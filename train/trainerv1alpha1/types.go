package trainerv1alpha1

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// GroupVersion is trainer.kubeflow.org/v1alpha1 (groupversion_info.go).
var GroupVersion = schema.GroupVersion{Group: "trainer.kubeflow.org", Version: "v1alpha1"}

// The kinds (trainjob_types.go, trainingruntime_types.go).
const (
	TrainJobKind               = "TrainJob"
	TrainingRuntimeKind        = "TrainingRuntime"
	ClusterTrainingRuntimeKind = "ClusterTrainingRuntime"
)

// The TrainJob's condition types and the reasons the Trainer sets
// (trainjob_types.go).
const (
	TrainJobSuspended = "Suspended"
	TrainJobComplete  = "Complete"
	TrainJobFailed    = "Failed"

	TrainJobSuspendedReason           = "Suspended"
	TrainJobResumedReason             = "Resumed"
	TrainJobRuntimeNotSupportedReason = "TrainingRuntimeNotSupported"
	TrainJobDeadlineExceededReason    = "DeadlineExceeded"
)

// Labels and names the Trainer reads (pkg/constants/constants.go).
const (
	// LabelTrainJobAncestor marks the replicated job of a runtime that a
	// step of the TrainJob (AncestorTrainer, dataset-initializer,
	// model-initializer) overrides.
	LabelTrainJobAncestor = "trainer.kubeflow.org/trainjob-ancestor-step"
	AncestorTrainer       = "trainer"
	DatasetInitializer    = "dataset-initializer"
	ModelInitializer      = "model-initializer"
	// LabelFramework is the label the shipped runtimes carry
	// (manifests/base/runtimes) and the Kubeflow SDK reads.
	LabelFramework = "trainer.kubeflow.org/framework"
	// Node names the trainer's replicated job and its container; Launcher
	// the MPI launcher's replicated job.
	Node     = "node"
	Launcher = "launcher"
	// ContainerTrainerPort is the port of the torch rendezvous.
	ContainerTrainerPort int32 = 29500
)

// The variables a framework's plugin sets itself, which its webhook
// refuses in spec.trainer.env (constants.go TorchRunReservedEnvNames,
// MPIReservedEnvNames, XGBoostReservedEnvNames).
var (
	TorchReservedEnv   = []string{"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"}
	MPIReservedEnv     = []string{"OMPI_MCA_orte_default_hostfile", "OMPI_MCA_plm_rsh_args", "OMPI_MCA_orte_keep_fqdn_hostnames", "OMPI_MCA_orte_set_default_slots"}
	XGBoostReservedEnv = []string{"DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID", "DMLC_NUM_WORKER"}
)

// TrainJob is a training job (trainjob_types.go).
type TrainJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              TrainJobSpec   `json:"spec,omitzero"`
	Status            TrainJobStatus `json:"status,omitzero"`
}

// TrainJobSpec is what a TrainJob asks for.
type TrainJobSpec struct {
	RuntimeRef            RuntimeRef     `json:"runtimeRef,omitzero"`
	Trainer               *Trainer       `json:"trainer,omitempty"`
	RuntimePatches        []RuntimePatch `json:"runtimePatches,omitempty"`
	Suspend               *bool          `json:"suspend,omitempty"`
	ActiveDeadlineSeconds int64          `json:"activeDeadlineSeconds,omitempty"`
	ManagedBy             *string        `json:"managedBy,omitempty"`
}

// RuntimeRef names the runtime a TrainJob runs on.
type RuntimeRef struct {
	Name     string  `json:"name,omitempty"`
	APIGroup *string `json:"apiGroup,omitempty"`
	Kind     *string `json:"kind,omitempty"`
}

// Trainer is what the TrainJob sets on the trainer step of its runtime.
type Trainer struct {
	Image            *string                      `json:"image,omitempty"`
	Command          []string                     `json:"command,omitempty"`
	Args             []string                     `json:"args,omitempty"`
	Env              []corev1.EnvVar              `json:"env,omitempty"`
	NumNodes         *int32                       `json:"numNodes,omitempty"`
	ResourcesPerNode *corev1.ResourceRequirements `json:"resourcesPerNode,omitempty"`
	NumProcPerNode   *int32                       `json:"numProcPerNode,omitempty"`
}

// RuntimePatch is a patch of the runtime's template, owned by a manager.
type RuntimePatch struct {
	Manager             string                    `json:"manager,omitempty"`
	Time                *metav1.Time              `json:"time,omitempty"`
	TrainingRuntimeSpec *TrainingRuntimeSpecPatch `json:"trainingRuntimeSpec,omitempty"`
}

// TrainingRuntimeSpecPatch patches a TrainingRuntimeSpec.
type TrainingRuntimeSpecPatch struct {
	Template *JobSetTemplatePatch `json:"template,omitempty"`
}

// JobSetTemplatePatch patches the JobSet template: its labels and
// annotations and its replicated jobs.
type JobSetTemplatePatch struct {
	Metadata *metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec     *JobSetSpecPatch   `json:"spec,omitempty"`
}

// JobSetSpecPatch patches replicated jobs by name.
type JobSetSpecPatch struct {
	ReplicatedJobs []ReplicatedJobPatch `json:"replicatedJobs,omitempty"`
}

// ReplicatedJobPatch patches one replicated job.
type ReplicatedJobPatch struct {
	Name     string            `json:"name,omitempty"`
	Template *JobTemplatePatch `json:"template,omitempty"`
}

// JobTemplatePatch patches a Job template.
type JobTemplatePatch struct {
	Metadata *metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec     *JobSpecPatch      `json:"spec,omitempty"`
}

// JobSpecPatch patches a Job spec's pod template.
type JobSpecPatch struct {
	Template *PodTemplatePatch `json:"template,omitempty"`
}

// PodTemplatePatch patches a pod template.
type PodTemplatePatch struct {
	Metadata *metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec     *PodSpecPatch      `json:"spec,omitempty"`
}

// PodSpecPatch holds the pod fields a runtime patch may set.
type PodSpecPatch struct {
	ServiceAccountName            *string                       `json:"serviceAccountName,omitempty"`
	Volumes                       []corev1.Volume               `json:"volumes,omitempty"`
	InitContainers                []ContainerPatch              `json:"initContainers,omitempty"`
	Containers                    []ContainerPatch              `json:"containers,omitempty"`
	ImagePullSecrets              []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	SecurityContext               *corev1.PodSecurityContext    `json:"securityContext,omitempty"`
	NodeSelector                  map[string]string             `json:"nodeSelector,omitempty"`
	Affinity                      *corev1.Affinity              `json:"affinity,omitempty"`
	Tolerations                   []corev1.Toleration           `json:"tolerations,omitempty"`
	SchedulingGates               []corev1.PodSchedulingGate    `json:"schedulingGates,omitempty"`
	TerminationGracePeriodSeconds *int64                        `json:"terminationGracePeriodSeconds,omitempty"`
}

// ContainerPatch holds the container fields a runtime patch may set.
type ContainerPatch struct {
	Name            string                  `json:"name,omitempty"`
	Env             []corev1.EnvVar         `json:"env,omitempty"`
	VolumeMounts    []corev1.VolumeMount    `json:"volumeMounts,omitempty"`
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
}

// TrainJobStatus is where a TrainJob stands.
type TrainJobStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	JobsStatus []JobStatus        `json:"jobsStatus,omitempty"`
}

// JobStatus counts the child Jobs of one replicated job.
type JobStatus struct {
	Name      string `json:"name,omitempty"`
	Ready     *int32 `json:"ready,omitempty"`
	Succeeded *int32 `json:"succeeded,omitempty"`
	Failed    *int32 `json:"failed,omitempty"`
	Active    *int32 `json:"active,omitempty"`
	Suspended *int32 `json:"suspended,omitempty"`
}

// ClusterTrainingRuntime is a runtime every namespace's TrainJobs may
// name (trainingruntime_types.go).
type ClusterTrainingRuntime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              TrainingRuntimeSpec `json:"spec,omitzero"`
}

// TrainingRuntime is a runtime the TrainJobs of its namespace may name.
type TrainingRuntime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              TrainingRuntimeSpec `json:"spec,omitempty,omitzero"`
}

// TrainingRuntimeSpec is a runtime: its ML policy, gang policy and JobSet
// template.
type TrainingRuntimeSpec struct {
	MLPolicy       *MLPolicy          `json:"mlPolicy,omitempty"`
	PodGroupPolicy *PodGroupPolicy    `json:"podGroupPolicy,omitempty"`
	Template       JobSetTemplateSpec `json:"template,omitzero"`
}

// JobSetTemplateSpec is the JobSet a TrainJob of the runtime becomes.
type JobSetTemplateSpec struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              jobsetv1alpha2.JobSetSpec `json:"spec,omitempty"`
}

// PodGroupPolicy is the runtime's gang scheduling.
type PodGroupPolicy struct {
	PodGroupPolicySource `json:",inline"`
}

// PodGroupPolicySource names the gang scheduler: one of its members.
type PodGroupPolicySource struct {
	Coscheduling *CoschedulingPodGroupPolicySource `json:"coscheduling,omitempty"`
	Volcano      *VolcanoPodGroupPolicySource      `json:"volcano,omitempty"`
}

// CoschedulingPodGroupPolicySource is the scheduler-plugins coscheduling
// gang.
type CoschedulingPodGroupPolicySource struct {
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`
}

// VolcanoPodGroupPolicySource is Volcano's gang.
type VolcanoPodGroupPolicySource struct {
	NetworkTopology *volcanov1beta1.NetworkTopologySpec `json:"networkTopology,omitempty"`
}

// MLPolicy is the runtime's node count and framework policy.
type MLPolicy struct {
	NumNodes       *int32 `json:"numNodes,omitempty"`
	MLPolicySource `json:",inline"`
}

// MLPolicySource is one framework's policy.
type MLPolicySource struct {
	Torch   *TorchMLPolicySource   `json:"torch,omitempty"`
	MPI     *MPIMLPolicySource     `json:"mpi,omitempty"`
	JAX     *JAXMLPolicySource     `json:"jax,omitempty"`
	XGBoost *XGBoostMLPolicySource `json:"xgboost,omitempty"`
}

// TorchMLPolicySource is the torch policy (the Trainer sets the PET_*
// variables torchrun reads).
type TorchMLPolicySource struct{}

// JAXMLPolicySource is the JAX policy.
type JAXMLPolicySource struct{}

// XGBoostMLPolicySource is the XGBoost policy.
type XGBoostMLPolicySource struct{}

// MPIMLPolicySource is the MPI policy.
type MPIMLPolicySource struct {
	NumProcPerNode    *int32             `json:"numProcPerNode,omitempty"`
	MPIImplementation *MPIImplementation `json:"mpiImplementation,omitempty"`
	SSHAuthMountPath  *string            `json:"sshAuthMountPath,omitempty"`
	RunLauncherAsNode *bool              `json:"runLauncherAsNode,omitempty"`
}

// MPIImplementation is the MPI the hostfile is written for.
type MPIImplementation string

// The MPI implementations.
const (
	MPIImplementationOpenMPI MPIImplementation = "OpenMPI"
	MPIImplementationIntel   MPIImplementation = "Intel"
	MPIImplementationMPICH   MPIImplementation = "MPICH"
)

// deepCopy copies in through JSON, which carries every field of these
// types.
func deepCopy[T any](in *T) *T {
	if in == nil {
		return nil
	}
	data, err := json.Marshal(in)
	if err != nil {
		panic("trainerv1alpha1: " + err.Error()) // every field is JSON
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		panic("trainerv1alpha1: " + err.Error())
	}
	return out
}

// DeepCopy returns a copy of j.
func (j *TrainJob) DeepCopy() *TrainJob { return deepCopy(j) }

// DeepCopyObject implements runtime.Object.
func (j *TrainJob) DeepCopyObject() runtime.Object { return j.DeepCopy() }

// DeepCopy returns a copy of r.
func (r *ClusterTrainingRuntime) DeepCopy() *ClusterTrainingRuntime { return deepCopy(r) }

// DeepCopyObject implements runtime.Object.
func (r *ClusterTrainingRuntime) DeepCopyObject() runtime.Object { return r.DeepCopy() }

// DeepCopy returns a copy of r.
func (r *TrainingRuntime) DeepCopy() *TrainingRuntime { return deepCopy(r) }

// DeepCopyObject implements runtime.Object.
func (r *TrainingRuntime) DeepCopyObject() runtime.Object { return r.DeepCopy() }

// DeepCopy returns a copy of p.
func (p *PodTemplatePatch) DeepCopy() *PodTemplatePatch { return deepCopy(p) }
