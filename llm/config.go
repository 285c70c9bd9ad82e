package llm

// LLaMAFactoryVersion is the LLaMA-Factory release whose argument
// dataclasses the rendered configuration follows (tag v0.9.5, commit
// 7af909522a951e3ad9f022ea6f88b6755257eaa5): every key below is a field of
// src/llamafactory/hparams/{model_args,data_args,finetuning_args,training_args}.py
// there, or of the Hugging Face Seq2SeqTrainingArguments it extends
// (transformers src/transformers/training_args.py; v0.9.5 accepts
// transformers 4.55 to 5.6). testdata/contracts/llamafactory.tsv states
// them with their allowed values, the exclusions, the dataset columns each
// format needs and what the default images contain, and the tests check
// every rendered configuration against it: LLaMA-Factory's parser refuses
// a key it does not know ("Some specified arguments are not used by the
// HfArgumentParser", hparams/parser.py).
const LLaMAFactoryVersion = "0.9.5"

// Default images: LLaMA-Factory's own, as its release workflow
// (.github/workflows/docker.yml at v0.9.5) tags them: CUDA, and the
// Ascend A2 build (Atlas 800T A2, the 910B series) on CANN.
const (
	DefaultImage       = "docker.io/hiyouga/llamafactory:" + LLaMAFactoryVersion
	DefaultAscendImage = "docker.io/hiyouga/llamafactory:" + LLaMAFactoryVersion + "-npu-a2"
)

// trainConfig is the YAML `llamafactory-cli train` reads. LLaMA-Factory
// loads it with OmegaConf.load (hparams/parser.py read_args), whose YAML
// loader reads exponent floats without a dot ("5e-06") as floats
// (omegaconf/_utils.py get_yaml_loader adds that resolver; plain YAML 1.1
// would read a string), so Go's float formatting is safe here. Field order is
// the order of LLaMA-Factory's own examples (examples/train_lora/*.yaml):
// model, method, dataset, output, train, eval.
type trainConfig struct {
	// model_args.py: BaseModelArguments, QuantizationArguments.
	ModelNameOrPath              string `json:"model_name_or_path"`
	AdapterNameOrPath            string `json:"adapter_name_or_path,omitempty"`
	TrustRemoteCode              bool   `json:"trust_remote_code,omitempty"`
	QuantizationBit              int    `json:"quantization_bit,omitempty"`
	QuantizationMethod           string `json:"quantization_method,omitempty"`
	QuantizationType             string `json:"quantization_type,omitempty"`
	DoubleQuantization           *bool  `json:"double_quantization,omitempty"`
	DisableGradientCheckpointing bool   `json:"disable_gradient_checkpointing,omitempty"`

	// finetuning_args.py: FinetuningArguments, LoraArguments,
	// FreezeArguments, RLHFArguments.
	Stage                   string   `json:"stage"`
	DoTrain                 bool     `json:"do_train"`
	FinetuningType          string   `json:"finetuning_type"`
	LoraRank                int      `json:"lora_rank,omitempty"`
	LoraAlpha               int      `json:"lora_alpha,omitempty"`
	LoraDropout             *float64 `json:"lora_dropout,omitempty"`
	LoraTarget              string   `json:"lora_target,omitempty"`
	FreezeTrainableLayers   int      `json:"freeze_trainable_layers,omitempty"`
	PrefBeta                *float64 `json:"pref_beta,omitempty"`
	PrefLoss                string   `json:"pref_loss,omitempty"`
	PrefFtx                 float64  `json:"pref_ftx,omitempty"`
	SimpoGamma              *float64 `json:"simpo_gamma,omitempty"`
	KTOChosenWeight         *float64 `json:"kto_chosen_weight,omitempty"`
	KTORejectedWeight       *float64 `json:"kto_rejected_weight,omitempty"`
	RefModel                string   `json:"ref_model,omitempty"`
	RefModelAdapters        string   `json:"ref_model_adapters,omitempty"`
	RefModelQuantizationBit int      `json:"ref_model_quantization_bit,omitempty"`
	RewardModel             string   `json:"reward_model,omitempty"`
	RewardModelType         string   `json:"reward_model_type,omitempty"`
	PPOEpochs               int      `json:"ppo_epochs,omitempty"`
	PlotLoss                bool     `json:"plot_loss"`

	// data_args.py: DataArguments.
	Dataset                 string  `json:"dataset"`
	EvalDataset             string  `json:"eval_dataset,omitempty"`
	DatasetDir              string  `json:"dataset_dir"`
	Template                string  `json:"template"`
	CutoffLen               int     `json:"cutoff_len"`
	MaxSamples              int     `json:"max_samples,omitempty"`
	ValSize                 float64 `json:"val_size,omitempty"`
	PreprocessingNumWorkers int     `json:"preprocessing_num_workers,omitempty"`

	// training_args.py (LLaMA-Factory's TrainingArguments over Hugging
	// Face's Seq2SeqTrainingArguments).
	OutputDir                 string  `json:"output_dir"`
	LoggingSteps              int     `json:"logging_steps"`
	SaveStrategy              string  `json:"save_strategy,omitempty"`
	SaveSteps                 int     `json:"save_steps,omitempty"`
	SaveTotalLimit            int     `json:"save_total_limit,omitempty"`
	ReportTo                  string  `json:"report_to"`
	RunName                   string  `json:"run_name,omitempty"`
	PerDeviceTrainBatchSize   int     `json:"per_device_train_batch_size"`
	GradientAccumulationSteps int     `json:"gradient_accumulation_steps"`
	LearningRate              float64 `json:"learning_rate"`
	NumTrainEpochs            float64 `json:"num_train_epochs,omitempty"`
	MaxSteps                  int     `json:"max_steps,omitempty"`
	LRSchedulerType           string  `json:"lr_scheduler_type"`
	// WarmupSteps is an integer count: transformers 5 also reads a
	// fraction here, 4.x does not, and both read a count.
	WarmupSteps int     `json:"warmup_steps,omitempty"`
	MaxGradNorm float64 `json:"max_grad_norm"`
	BF16        bool    `json:"bf16,omitempty"`
	FP16        bool    `json:"fp16,omitempty"`
	DDPTimeout  int     `json:"ddp_timeout"`
	DeepSpeed   string  `json:"deepspeed,omitempty"`
	Seed        *int    `json:"seed,omitempty"`

	EvalStrategy           string `json:"eval_strategy,omitempty"`
	EvalSteps              int    `json:"eval_steps,omitempty"`
	PerDeviceEvalBatchSize int    `json:"per_device_eval_batch_size,omitempty"`
}

// exportConfig is the YAML `llamafactory-cli export` reads to merge a LoRA
// adapter into its base model (examples/merge_lora/*.yaml at v0.9.5;
// export_dir and export_size are ExportArguments in model_args.py).
type exportConfig struct {
	ModelNameOrPath    string `json:"model_name_or_path"`
	AdapterNameOrPath  string `json:"adapter_name_or_path"`
	Template           string `json:"template"`
	TrustRemoteCode    bool   `json:"trust_remote_code,omitempty"`
	ExportDir          string `json:"export_dir"`
	ExportSize         int    `json:"export_size,omitempty"`
	ExportDevice       string `json:"export_device,omitempty"`
	ExportLegacyFormat bool   `json:"export_legacy_format,omitempty"`
}
