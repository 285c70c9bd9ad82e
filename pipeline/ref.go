package pipeline

// Placeholders that steps use in their command, args, env, function inputs,
// workload objects, When and ForEachIn. The compiler turns them into Argo
// expressions; the local runner replaces them with values.
const (
	// ItemRef is the current item of a fanned-out step ({{item}}).
	ItemRef = "{{item}}"
	// WorkspaceDir is the shared workspace directory ({{workspace}}): the
	// workspace mount path in Argo, a directory of the run directory locally.
	WorkspaceDir = "{{workspace}}"
	// PipelineName is the name of the run ({{pipeline.name}}): the Workflow's
	// name in Argo, the pipeline's name locally.
	PipelineName = "{{pipeline.name}}"
	// PipelineStatus is the outcome of the run, for the exit handler only
	// ({{pipeline.status}}): Succeeded, Failed or Error.
	PipelineStatus = "{{pipeline.status}}"
)

// ParamRef returns the placeholder of pipeline parameter name
// ({{params.NAME}}).
func ParamRef(name string) string { return "{{params." + name + "}}" }

// ItemField returns the placeholder of field key of the current item, for
// fan-out over a list of JSON objects ({{item.KEY}}).
func ItemField(key string) string { return "{{item." + key + "}}" }

// OutputFile returns the placeholder of the file a container step writes its
// output name to ({{outputs.NAME.path}}); the directory is also in
// $CUBE_OUTPUTS.
func OutputFile(name string) string { return "{{outputs." + name + ".path}}" }

// The environment of a container step, in Argo and locally.
const (
	// EnvOutputs names the directory a step writes its outputs to, one file
	// per output.
	EnvOutputs = "CUBE_OUTPUTS"
	// EnvWorkspace names the shared workspace directory.
	EnvWorkspace = "CUBE_WORKSPACE"
)
