// Command kubectl-delivery does, for the test cluster, what the image
// mpioperator/kubectl-delivery does as the init container the
// training-operator (v1.8.1, pkg/controller.v1/mpi, newLauncher) adds to an
// MPIJob's launcher: it copies kubectl into $TARGET_DIR, the volume the
// launcher's kubexec.sh runs it from, and waits until every pod named in the
// hostfile (/etc/mpi/hostfile, "<pod> slots=<n>" per line) is running, so
// that mpirun's first kubectl exec finds its workers.
package main
