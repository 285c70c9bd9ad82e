package train

import (
	"slices"
	"strconv"
)

// Where the training-operator's MPIJob puts the hostfile it writes for the
// launcher (it also sets OMPI_MCA_orte_default_hostfile to it).
const MPIHostfile = "/etc/mpi/hostfile"

// TorchrunCommand returns the command line that runs script with args
// under torchrun in a PyTorchJob replica:
//
//	torchrun script args...
//
// The training-operator sets PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK
// and PET_MASTER_ADDR/PET_MASTER_PORT (PET_RDZV_* for elastic jobs), which
// torchrun reads as the defaults of its flags, so none are repeated here
// and the same command serves every replica.
func TorchrunCommand(script string, args ...string) []string {
	return append([]string{"torchrun", script}, args...)
}

// MPIRunCommand returns the Open MPI command line an MPIJob launcher runs:
// processes ranks placed slot by slot on the hosts of the hostfile the
// operator writes, with process binding off (GPU jobs bind per rank
// themselves):
//
//	mpirun --allow-run-as-root -np N -bind-to none -map-by slot program...
func MPIRunCommand(processes int, program ...string) []string {
	return append([]string{"mpirun", "--allow-run-as-root", "-np", strconv.Itoa(processes),
		"-bind-to", "none", "-map-by", "slot"}, program...)
}

// HorovodMPIRunCommand is MPIRunCommand with the flags Horovod documents
// for Open MPI: the library paths and NCCL settings forwarded to every
// rank, the ob1 point-to-point layer, and the openib transport excluded
// (NCCL carries the GPU traffic).
func HorovodMPIRunCommand(processes int, program ...string) []string {
	cmd := MPIRunCommand(processes)
	cmd = append(cmd, "-x", "LD_LIBRARY_PATH", "-x", "PATH", "-x", "NCCL_DEBUG",
		"-mca", "pml", "ob1", "-mca", "btl", "^openib")
	return append(cmd, program...)
}

// HorovodRunCommand returns horovodrun's command line:
//
//	horovodrun -np N --hostfile hostfile program...
//
// horovodrun reaches the hosts over ssh, so use it where the pods run sshd
// (a Volcano job with the ssh plugin); MPIJob workers are reached through
// kubectl exec instead, and the Horovod builder launches them with
// HorovodMPIRunCommand.
func HorovodRunCommand(processes int, hostfile string, program ...string) []string {
	return append([]string{"horovodrun", "-np", strconv.Itoa(processes), "--hostfile", hostfile}, program...)
}

// PaddleLaunchCommand returns the command line that runs script with args
// under paddle.distributed.launch, which reads PADDLE_MASTER, PADDLE_NNODES
// and PADDLE_JOB_ID from the environment the operator sets:
//
//	python -m paddle.distributed.launch script args...
func PaddleLaunchCommand(script string, args ...string) []string {
	return append([]string{"python", "-m", "paddle.distributed.launch", script}, args...)
}

// ColossalAIRunCommand returns the command line that runs script with args
// under `colossalai run` on one replica of a PyTorchJob with a Master:
// colossalai run starts torchrun on the local node, and the node count and
// rank it would otherwise fix at 1 and 0 are passed through to torchrun
// from the operator's environment (Kubernetes expands $(VAR)):
//
//	colossalai run --nproc_per_node N --master_addr $(MASTER_ADDR) --master_port $(MASTER_PORT)
//	  --extra_launch_args nnodes=$(PET_NNODES),node_rank=$(PET_NODE_RANK) script args...
func ColossalAIRunCommand(nprocPerNode int, script string, args ...string) []string {
	cmd := []string{"colossalai", "run", "--nproc_per_node", strconv.Itoa(nprocPerNode),
		"--master_addr", "$(MASTER_ADDR)", "--master_port", "$(MASTER_PORT)",
		"--extra_launch_args", "nnodes=$(PET_NNODES),node_rank=$(PET_NODE_RANK)", script}
	return append(cmd, slices.Clone(args)...)
}
