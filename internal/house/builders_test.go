package house

import (
	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/market"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/ops"
	"github.com/cubestudio/cube/pipeline"
	pipelineargo "github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
	"github.com/cubestudio/cube/tune"
	"github.com/cubestudio/cube/vgpu"
)

// builders are every builder of the module, as nil pointers for their
// method sets. TestEveryBuilderIsChecked fails when one is missing.
var builders = []any{
	(*label.MLBackendServer)(nil),
	(*label.StudioServer)(nil),
	(*llm.Export)(nil),
	(*llm.FineTune)(nil),
	(*llm.RL)(nil),
	(*market.DownloadJob)(nil),
	(*market.EvaluationJob)(nil),
	(*market.FineTuneRun)(nil),
	(*notebook.Notebook)(nil),
	(*ops.LeaseSpec)(nil),
	(*pipeline.ContainerStep)(nil),
	(*pipeline.Pipeline)(nil),
	(*pipelineargo.CronWorkflowBuilder)(nil),
	(*pipelineargo.WorkflowBuilder)(nil),
	(*serve.Service)(nil),
	(*serve.Split)(nil),
	(*tenant.Spec)(nil),
	(*train.ColossalAIJob)(nil),
	(*train.DeepSpeedJob)(nil),
	(*train.MPIJob)(nil),
	(*train.MXNetJob)(nil),
	(*train.PaddleJob)(nil),
	(*train.PyTorchJob)(nil),
	(*train.RayJob)(nil),
	(*train.TFJob)(nil),
	(*train.TrainJob)(nil),
	(*train.ClusterTrainingRuntime)(nil),
	(*train.VolcanoJob)(nil),
	(*train.XGBoostJob)(nil),
	(*tune.Experiment)(nil),
	(*vgpu.Spec)(nil), // a builder taken by pod.Builder.Slice: settings only
}
