package serve_test

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/serve"
)

func ExampleTritonModelConfig_ConfigPbtxt() {
	cfg := serve.TritonModelConfig{
		Name:         "resnet50",
		Platform:     serve.TritonPlatformONNX,
		MaxBatchSize: 16,
		Inputs:       []serve.TritonInput{{Name: "input", DataType: serve.TritonFP32, Dims: []int64{3, 224, 224}}},
		Outputs:      []serve.TritonOutput{{Name: "logits", DataType: serve.TritonFP32, Dims: []int64{-1}}},
		InstanceGroups: []serve.TritonInstanceGroup{
			{Count: 2, Kind: serve.TritonKindGPU},
		},
		DynamicBatching: &serve.TritonDynamicBatching{PreferredBatchSizes: []int32{8, 16}, MaxQueueDelay: 500 * time.Microsecond},
	}
	text, err := cfg.ConfigPbtxt()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(text)

	cfg.Inputs[0].Dims = []int64{3, 0, 224}
	cfg.Platform, cfg.Backend = "", "python"
	cfg.MaxBatchSize = -1
	_, err = cfg.ConfigPbtxt()
	fmt.Println(err)
	// Output:
	// name: "resnet50"
	// platform: "onnxruntime_onnx"
	// max_batch_size: 16
	// input [
	//   {
	//     name: "input"
	//     data_type: TYPE_FP32
	//     dims: [ 3, 224, 224 ]
	//   }
	// ]
	// output [
	//   {
	//     name: "logits"
	//     data_type: TYPE_FP32
	//     dims: [ -1 ]
	//   }
	// ]
	// instance_group [
	//   {
	//     count: 2
	//     kind: KIND_GPU
	//   }
	// ]
	// dynamic_batching {
	//   preferred_batch_size: [ 8, 16 ]
	//   max_queue_delay_microseconds: 500
	// }
	// [max_batch_size: Invalid value: -1: must not be negative (0: the model does not batch), input[0].dims[1]: Invalid value: 0: must be 1 or more, or -1 for a variable size, dynamic_batching.preferred_batch_size[0]: Invalid value: 8: must be between 1 and max_batch_size (-1), dynamic_batching.preferred_batch_size[1]: Invalid value: 16: must be between 1 and max_batch_size (-1)]
}

// Triton's vLLM backend serving a Hugging Face model: cube generates the
// repository (config.pbtxt and model.json) into a ConfigMap.
func ExampleService_AddTritonModel() {
	svc := serve.Triton("qwen", "hf://Qwen/Qwen2.5-7B-Instruct").
		AddTritonModel(serve.TritonVLLMModel("qwen")).
		On(hardware.L4).Accelerators(1).
		MaxModelLen(8192).GPUMemoryUtilization(0.9).
		HFToken("hf-token", "token")
	objs, err := svc.Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	cm := objs[0].(*corev1.ConfigMap)
	fmt.Print(cm.Data["qwen.1.model.json"])
	describe(svc)
	// Output:
	// {
	//   "gpu_memory_utilization": 0.9,
	//   "max_model_len": 8192,
	//   "model": "Qwen/Qwen2.5-7B-Instruct"
	// }
	// ConfigMap qwen-config
	// Deployment qwen
	//   pod triton: tritonserver --model-repository=/models --http-port=8000 --grpc-port=8001 --metrics-port=8002
	//   pod nvidia.com/gpu: 1
	// Service qwen-api
}
