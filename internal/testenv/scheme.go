package testenv

import (
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// NewScheme returns a scheme with the built-in Kubernetes types and the Go
// types of every installed CRD that has them: apiextensions v1,
// training-operator kubeflow.org/v1, Volcano batch v1alpha1 and scheduling
// v1beta1, Argo Workflows v1alpha1, LeaderWorkerSet v1, KubeRay v1 and
// Gateway API v1. Katib's Experiment has no Go types here; use
// unstructured objects for it.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		kubeflowv1.AddToScheme,
		vcbatch.AddToScheme,
		vcscheduling.AddToScheme,
		wfv1.AddToScheme,
		lwsv1.AddToScheme,
		rayv1.AddToScheme,
		gatewayv1.Install,
	} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("build scheme: %w", err)
		}
	}
	return scheme, nil
}
