package kinds

import (
	"slices"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
	"github.com/cubestudio/cube/tune"
)

// All returns every kind cube's packages build beyond the Kubernetes API's
// own (which every cube.Client reads: cube.CoreKinds): the training jobs,
// serving's LeaderWorkerSet and HTTPRoute, Argo's Workflow and
// CronWorkflow, Katib's Experiment, and a tenant's Volcano Queue.
func All() []cube.Kind {
	return slices.Concat(train.Kinds(), serve.Kinds(), argo.Kinds(), tune.Kinds(), tenant.Kinds())
}
