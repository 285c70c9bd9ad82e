package serve

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TritonModelConfig is a Triton model configuration, the config.pbtxt of
// one model of a model repository: the subset of ModelConfig in Triton's
// model_config.proto (triton-inference-server/common) that serving needs.
// ConfigPbtxt renders it as protobuf text format; Service.AddTritonModel
// puts it into a repository cube generates. Validation errors name the
// proto's fields (input[0].dims[1]).
type TritonModelConfig struct {
	// Name is the model's name (name), also its directory in the
	// repository and what clients call it.
	Name string
	// Platform (platform) names a model format Triton's backends load
	// by platform: TritonPlatformTensorRT, TritonPlatformONNX… Set it or
	// Backend, not both.
	Platform string
	// Backend (backend) names the backend that runs the model:
	// TritonBackendPython, TritonBackendVLLM, TritonBackendONNXRuntime…
	Backend string
	// MaxBatchSize (max_batch_size) is the largest batch Triton forms; 0
	// means the model does not batch and dims are the full shapes.
	MaxBatchSize int32
	// Inputs (input) and Outputs (output) are the model's tensors; backends
	// that complete the configuration themselves (vLLM, ONNX Runtime,
	// TensorRT) may leave them empty.
	Inputs  []TritonInput
	Outputs []TritonOutput
	// InstanceGroups (instance_group) say how many instances run where;
	// none means one instance on each available GPU.
	InstanceGroups []TritonInstanceGroup
	// DynamicBatching (dynamic_batching) switches on the dynamic batcher.
	DynamicBatching *TritonDynamicBatching
	// Decoupled sets model_transaction_policy { decoupled: true }: the
	// model may send any number of responses per request, which streaming
	// needs (the vLLM backend requires it).
	Decoupled bool
	// Parameters (parameters) are backend-specific string parameters,
	// such as the Python backend's EXECUTION_ENV_PATH.
	Parameters map[string]string
	// VersionFiles are text files cube writes into the model's version
	// directory <repository>/<name>/1 next to config.pbtxt, such as a
	// Python backend's model.py; keys are file names. Only a repository
	// cube generates has them; for the vLLM backend cube writes model.json.
	VersionFiles map[string]string
}

// TritonInput is one input tensor (ModelInput).
type TritonInput struct {
	Name     string
	DataType TritonDataType
	// Dims are the shape without the batch dimension; -1 is a dimension
	// of variable size.
	Dims []int64
	// Optional inputs may be left out of a request.
	Optional bool
}

// TritonOutput is one output tensor (ModelOutput).
type TritonOutput struct {
	Name     string
	DataType TritonDataType
	// Dims are the shape without the batch dimension; -1 is a dimension
	// of variable size.
	Dims []int64
}

// TritonInstanceGroup is a group of model instances (ModelInstanceGroup).
type TritonInstanceGroup struct {
	// Count is how many instances run, per GPU listed for a GPU group;
	// 0 means Triton's default, 1.
	Count int32
	// Kind is where they run; "" means KIND_AUTO.
	Kind TritonInstanceKind
	// DeviceIndices (gpus) are the devices, by index among those the pod
	// sees, a KIND_GPU or KIND_AUTO group uses; none means all.
	DeviceIndices []int32
}

// TritonDynamicBatching configures the dynamic batcher (ModelDynamicBatching).
type TritonDynamicBatching struct {
	// PreferredBatchSizes (preferred_batch_size) are batch sizes run as
	// soon as one can be formed; each at most MaxBatchSize.
	PreferredBatchSizes []int32
	// MaxQueueDelay (max_queue_delay_microseconds) is how long a request
	// may wait for others to batch with, in whole microseconds.
	MaxQueueDelay time.Duration
}

// TritonDataType is a tensor's element type, as model_config.proto's
// DataType enum spells it.
type TritonDataType string

// The tensor element types of model_config.proto.
const (
	TritonBool   TritonDataType = "TYPE_BOOL"
	TritonUint8  TritonDataType = "TYPE_UINT8"
	TritonUint16 TritonDataType = "TYPE_UINT16"
	TritonUint32 TritonDataType = "TYPE_UINT32"
	TritonUint64 TritonDataType = "TYPE_UINT64"
	TritonInt8   TritonDataType = "TYPE_INT8"
	TritonInt16  TritonDataType = "TYPE_INT16"
	TritonInt32  TritonDataType = "TYPE_INT32"
	TritonInt64  TritonDataType = "TYPE_INT64"
	TritonFP16   TritonDataType = "TYPE_FP16"
	TritonFP32   TritonDataType = "TYPE_FP32"
	TritonFP64   TritonDataType = "TYPE_FP64"
	TritonString TritonDataType = "TYPE_STRING"
	TritonBF16   TritonDataType = "TYPE_BF16"
)

var tritonDataTypes = []string{
	string(TritonBool), string(TritonUint8), string(TritonUint16), string(TritonUint32), string(TritonUint64),
	string(TritonInt8), string(TritonInt16), string(TritonInt32), string(TritonInt64),
	string(TritonFP16), string(TritonFP32), string(TritonFP64), string(TritonString), string(TritonBF16),
}

// TritonInstanceKind is where an instance group runs
// (ModelInstanceGroup.Kind).
type TritonInstanceKind string

// The instance group kinds of model_config.proto.
const (
	// TritonKindAuto runs on the listed GPUs when they are all there,
	// else on the CPU.
	TritonKindAuto TritonInstanceKind = "KIND_AUTO"
	TritonKindGPU  TritonInstanceKind = "KIND_GPU"
	TritonKindCPU  TritonInstanceKind = "KIND_CPU"
	// TritonKindModel leaves device placement to the backend, as the vLLM
	// backend needs for a model across several GPUs.
	TritonKindModel TritonInstanceKind = "KIND_MODEL"
)

var tritonKinds = []string{string(TritonKindAuto), string(TritonKindGPU), string(TritonKindCPU), string(TritonKindModel)}

// Model formats named by platform.
const (
	TritonPlatformTensorRT             = "tensorrt_plan"
	TritonPlatformONNX                 = "onnxruntime_onnx"
	TritonPlatformPyTorch              = "pytorch_libtorch"
	TritonPlatformTensorFlowGraph      = "tensorflow_graphdef"
	TritonPlatformTensorFlowSavedModel = "tensorflow_savedmodel"
)

var tritonPlatforms = []string{TritonPlatformTensorRT, TritonPlatformONNX, TritonPlatformPyTorch,
	TritonPlatformTensorFlowGraph, TritonPlatformTensorFlowSavedModel}

// Backends named by backend.
const (
	TritonBackendONNXRuntime = "onnxruntime"
	TritonBackendTensorRT    = "tensorrt"
	TritonBackendPyTorch     = "pytorch"
	TritonBackendTensorFlow  = "tensorflow"
	TritonBackendOpenVINO    = "openvino"
	TritonBackendPython      = "python"
	// TritonBackendVLLM is Triton's vLLM backend (the
	// tritonserver:<yy.mm>-vllm-python-py3 images).
	TritonBackendVLLM = "vllm"
)

// TritonVLLMModel returns the configuration Triton's vLLM backend expects
// for a model called name (vllm_backend's samples): backend "vllm", no
// batching by Triton (vLLM batches), a decoupled transaction policy and one
// KIND_MODEL instance, which leaves the GPUs to vLLM. The backend adds its
// inputs and outputs (text_input, stream, sampling_parameters…, text_output)
// itself.
func TritonVLLMModel(name string) TritonModelConfig {
	return TritonModelConfig{
		Name:           name,
		Backend:        TritonBackendVLLM,
		Decoupled:      true,
		InstanceGroups: []TritonInstanceGroup{{Count: 1, Kind: TritonKindModel}},
	}
}

// ConfigPbtxt validates c and renders it as config.pbtxt, in protobuf text
// format with fields in a fixed order. Every problem comes back at once as
// a field.ErrorList aggregate.
func (c TritonModelConfig) ConfigPbtxt() (string, error) {
	if errs := c.validate(nil); len(errs) > 0 {
		return "", errs.ToAggregate()
	}
	return c.pbtxt(), nil
}

// tritonModelName is a model's directory name and part of a ConfigMap key.
var tritonModelName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)

// tritonBackendName is a directory under /opt/tritonserver/backends.
var tritonBackendName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// validate reports every problem of c under p (nil: paths start at the
// proto's field names).
func (c TritonModelConfig) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case c.Name == "":
		errs = append(errs, field.Required(p.Child("name"), "a model name is required"))
	case !tritonModelName.MatchString(c.Name) || strings.Contains(c.Name, ".."):
		errs = append(errs, field.Invalid(p.Child("name"), c.Name,
			"must hold letters, digits, '-', '.' and '_', start and end with a letter or digit, without '..': it names the model's directory"))
	}
	switch {
	case c.Platform == "" && c.Backend == "":
		errs = append(errs, field.Required(p.Child("backend"), "set backend (python, vllm, onnxruntime…) or platform (tensorrt_plan, onnxruntime_onnx…)"))
	case c.Platform != "" && c.Backend != "":
		errs = append(errs, field.Invalid(p.Child("platform"), c.Platform, fmt.Sprintf("set platform or backend, not both (backend is %q)", c.Backend)))
	case c.Platform != "" && !slices.Contains(tritonPlatforms, c.Platform):
		errs = append(errs, field.NotSupported(p.Child("platform"), c.Platform, tritonPlatforms))
	case c.Backend != "" && !tritonBackendName.MatchString(c.Backend):
		errs = append(errs, field.Invalid(p.Child("backend"), c.Backend, "must be a backend name of letters, digits, '-' and '_'"))
	}
	if c.MaxBatchSize < 0 {
		errs = append(errs, field.Invalid(p.Child("max_batch_size"), c.MaxBatchSize, "must not be negative (0: the model does not batch)"))
	}
	for i, in := range c.Inputs {
		ip := p.Child("input").Index(i)
		errs = append(errs, validateTensor(ip, in.Name, in.DataType, in.Dims)...)
		if in.Name != "" && slices.ContainsFunc(c.Inputs[:i], func(o TritonInput) bool { return o.Name == in.Name }) {
			errs = append(errs, field.Duplicate(ip.Child("name"), in.Name))
		}
	}
	for i, out := range c.Outputs {
		op := p.Child("output").Index(i)
		errs = append(errs, validateTensor(op, out.Name, out.DataType, out.Dims)...)
		if out.Name != "" && slices.ContainsFunc(c.Outputs[:i], func(o TritonOutput) bool { return o.Name == out.Name }) {
			errs = append(errs, field.Duplicate(op.Child("name"), out.Name))
		}
	}
	for i, g := range c.InstanceGroups {
		gp := p.Child("instance_group").Index(i)
		if g.Count < 0 {
			errs = append(errs, field.Invalid(gp.Child("count"), g.Count, "must not be negative (0: one instance)"))
		}
		if g.Kind != "" && !slices.Contains(tritonKinds, string(g.Kind)) {
			errs = append(errs, field.NotSupported(gp.Child("kind"), g.Kind, tritonKinds))
		}
		if len(g.DeviceIndices) > 0 && (g.Kind == TritonKindCPU || g.Kind == TritonKindModel) {
			errs = append(errs, field.Forbidden(gp.Child("gpus"), fmt.Sprintf("a %s group takes no gpus, only count", g.Kind)))
		}
		for j, gpu := range g.DeviceIndices {
			if gpu < 0 {
				errs = append(errs, field.Invalid(gp.Child("gpus").Index(j), gpu, "must be a device index, 0 or more"))
			} else if slices.Contains(g.DeviceIndices[:j], gpu) {
				errs = append(errs, field.Duplicate(gp.Child("gpus").Index(j), gpu))
			}
		}
	}
	if b := c.DynamicBatching; b != nil {
		bp := p.Child("dynamic_batching")
		for i, size := range b.PreferredBatchSizes {
			if size < 1 || size > c.MaxBatchSize {
				errs = append(errs, field.Invalid(bp.Child("preferred_batch_size").Index(i), size,
					fmt.Sprintf("must be between 1 and max_batch_size (%d)", c.MaxBatchSize)))
			}
		}
		if b.MaxQueueDelay < 0 || b.MaxQueueDelay%time.Microsecond != 0 {
			errs = append(errs, field.Invalid(bp.Child("max_queue_delay_microseconds"), b.MaxQueueDelay.String(),
				"must be zero or more whole microseconds"))
		}
	}
	for _, k := range sortedKeys(c.Parameters) {
		pp := p.Child("parameters").Key(k)
		if k == "" {
			errs = append(errs, field.Invalid(pp, k, "parameter names must not be empty"))
		}
		if !utf8.ValidString(k) || !utf8.ValidString(c.Parameters[k]) {
			errs = append(errs, field.Invalid(pp, c.Parameters[k], "names and values must be UTF-8 text"))
		}
	}
	if c.Backend == TritonBackendVLLM {
		errs = append(errs, c.validateVLLM(p)...)
	}
	return errs
}

// validateVLLM checks what the vLLM backend asserts when it loads a model.
func (c TritonModelConfig) validateVLLM(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !c.Decoupled {
		errs = append(errs, field.Required(p.Child("model_transaction_policy", "decoupled"),
			"the vLLM backend needs a decoupled transaction policy"))
	}
	if c.MaxBatchSize != 0 {
		errs = append(errs, field.Invalid(p.Child("max_batch_size"), c.MaxBatchSize, "must be 0 for the vLLM backend: vLLM batches requests itself"))
	}
	if c.DynamicBatching != nil {
		errs = append(errs, field.Forbidden(p.Child("dynamic_batching"), "the vLLM backend batches requests itself"))
	}
	return errs
}

func validateTensor(p *field.Path, name string, dt TritonDataType, dims []int64) field.ErrorList {
	var errs field.ErrorList
	switch {
	case name == "":
		errs = append(errs, field.Required(p.Child("name"), "a tensor name is required"))
	case !utf8.ValidString(name):
		errs = append(errs, field.Invalid(p.Child("name"), name, "must be UTF-8 text"))
	}
	if dt == "" {
		errs = append(errs, field.Required(p.Child("data_type"), "a data type such as TYPE_FP32 is required"))
	} else if !slices.Contains(tritonDataTypes, string(dt)) {
		errs = append(errs, field.NotSupported(p.Child("data_type"), dt, tritonDataTypes))
	}
	if len(dims) == 0 {
		errs = append(errs, field.Required(p.Child("dims"), "the shape without the batch dimension, such as [ -1 ] or [ 3, 224, 224 ]"))
	}
	for i, d := range dims {
		if d == 0 || d < -1 {
			errs = append(errs, field.Invalid(p.Child("dims").Index(i), d, "must be 1 or more, or -1 for a variable size"))
		}
	}
	return errs
}

// pbtxt writes c in protobuf text format, in the order of the fields in
// model_config.proto's ModelConfig where it matters to readers: identity,
// batching, tensors, instances, scheduling, transaction policy, parameters.
func (c TritonModelConfig) pbtxt() string {
	var w pbtxtWriter
	w.str("name", c.Name)
	if c.Platform != "" {
		w.str("platform", c.Platform)
	}
	if c.Backend != "" {
		w.str("backend", c.Backend)
	}
	w.scalar("max_batch_size", strconv.Itoa(int(c.MaxBatchSize)))
	if len(c.Inputs) > 0 {
		w.list("input", len(c.Inputs), func(i int) {
			in := c.Inputs[i]
			w.tensor(in.Name, in.DataType, in.Dims)
			if in.Optional {
				w.scalar("optional", "true")
			}
		})
	}
	if len(c.Outputs) > 0 {
		w.list("output", len(c.Outputs), func(i int) {
			out := c.Outputs[i]
			w.tensor(out.Name, out.DataType, out.Dims)
		})
	}
	if len(c.InstanceGroups) > 0 {
		w.list("instance_group", len(c.InstanceGroups), func(i int) {
			g := c.InstanceGroups[i]
			if g.Count != 0 {
				w.scalar("count", strconv.Itoa(int(g.Count)))
			}
			if g.Kind != "" {
				w.scalar("kind", string(g.Kind))
			}
			if len(g.DeviceIndices) > 0 {
				ints(&w, "gpus", g.DeviceIndices)
			}
		})
	}
	if b := c.DynamicBatching; b != nil {
		w.message("dynamic_batching", func() {
			if len(b.PreferredBatchSizes) > 0 {
				ints(&w, "preferred_batch_size", b.PreferredBatchSizes)
			}
			if b.MaxQueueDelay > 0 {
				w.scalar("max_queue_delay_microseconds", strconv.FormatInt(b.MaxQueueDelay.Microseconds(), 10))
			}
		})
	}
	if c.Decoupled {
		w.message("model_transaction_policy", func() { w.scalar("decoupled", "true") })
	}
	for _, k := range sortedKeys(c.Parameters) {
		w.message("parameters", func() {
			w.str("key", k)
			w.message("value", func() { w.str("string_value", c.Parameters[k]) })
		})
	}
	return w.String()
}

// pbtxtWriter writes protobuf text format indented by two spaces, the
// layout of Triton's own examples.
type pbtxtWriter struct {
	strings.Builder
	depth int
}

func (w *pbtxtWriter) line(s string) {
	w.WriteString(strings.Repeat("  ", w.depth))
	w.WriteString(s)
	w.WriteByte('\n')
}

func (w *pbtxtWriter) scalar(name, value string) { w.line(name + ": " + value) }

func (w *pbtxtWriter) str(name, value string) { w.scalar(name, quotePbtxt(value)) }

// tensor writes the fields inputs and outputs share.
func (w *pbtxtWriter) tensor(name string, dt TritonDataType, dims []int64) {
	w.str("name", name)
	w.scalar("data_type", string(dt))
	ints(w, "dims", dims)
}

// ints writes a repeated integer field in the list syntax: name: [ 1, 2 ].
func ints[T int32 | int64](w *pbtxtWriter, name string, values []T) {
	parts := make([]string, len(values))
	for i, n := range values {
		parts[i] = strconv.FormatInt(int64(n), 10)
	}
	w.scalar(name, "[ "+strings.Join(parts, ", ")+" ]")
}

func (w *pbtxtWriter) message(name string, body func()) {
	w.line(name + " {")
	w.depth++
	body()
	w.depth--
	w.line("}")
}

// list writes a repeated message field in the list syntax: name [ {…}, {…} ].
func (w *pbtxtWriter) list(name string, n int, item func(i int)) {
	w.line(name + " [")
	w.depth++
	for i := range n {
		w.line("{")
		w.depth++
		item(i)
		w.depth--
		if i < n-1 {
			w.line("},")
		} else {
			w.line("}")
		}
	}
	w.depth--
	w.line("]")
}

// quotePbtxt quotes s as a text-format string: backslash escapes for the
// quote, the backslash and common control characters, three-digit octal
// for the other control bytes; UTF-8 text passes through as the parser
// reads it.
func quotePbtxt(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// clone copies the slices and maps of c, so the caller's may change.
func (c TritonModelConfig) clone() TritonModelConfig {
	out := c
	out.Inputs = slices.Clone(c.Inputs)
	for i := range out.Inputs {
		out.Inputs[i].Dims = slices.Clone(out.Inputs[i].Dims)
	}
	out.Outputs = slices.Clone(c.Outputs)
	for i := range out.Outputs {
		out.Outputs[i].Dims = slices.Clone(out.Outputs[i].Dims)
	}
	out.InstanceGroups = slices.Clone(c.InstanceGroups)
	for i := range out.InstanceGroups {
		out.InstanceGroups[i].DeviceIndices = slices.Clone(out.InstanceGroups[i].DeviceIndices)
	}
	if c.DynamicBatching != nil {
		b := *c.DynamicBatching
		b.PreferredBatchSizes = slices.Clone(b.PreferredBatchSizes)
		out.DynamicBatching = &b
	}
	out.Parameters = maps.Clone(c.Parameters)
	out.VersionFiles = maps.Clone(c.VersionFiles)
	return out
}
