package testenv

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cubestudio/cube/cubetest"
)

// NewScheme returns a scheme with the built-in Kubernetes types and the Go
// types of every installed CRD that has them — cubetest's scheme (the
// training-operator kubeflow.org/v1, Volcano batch v1alpha1 and scheduling
// v1beta1, Argo Workflows v1alpha1, LeaderWorkerSet v1, KubeRay v1 and
// Gateway API v1) plus apiextensions v1. Katib's Experiment has no Go types
// here; use unstructured objects for it.
func NewScheme() (*runtime.Scheme, error) {
	scheme := cubetest.Scheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("build scheme: %w", err)
	}
	return scheme, nil
}
