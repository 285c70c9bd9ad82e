package datasets

// Format is the layout of a dataset's records, as LLaMA-Factory's
// data/README.md describes them.
type Format string

// Dataset formats.
const (
	// Alpaca records: instruction, input, output (and optional system,
	// history).
	Alpaca Format = "alpaca"
	// ShareGPT records: a conversations list of {from, value} messages.
	ShareGPT Format = "sharegpt"
)

// Kind says what a dataset teaches: instructions (SFT), preference pairs
// (reward models, DPO and its relatives) or KTO labels.
type Kind string

// Dataset kinds.
const (
	Instructions Kind = "instructions"
	Preferences  Kind = "preferences"
	KTOLabels    Kind = "kto"
)

// Dataset is one dataset of a fine-tune, registered in the
// dataset_info.json package llm generates. Make one with InstructionData,
// PreferenceData or KTOData.
type Dataset struct {
	// Name is the key in dataset_info.json and in the dataset argument.
	Name string
	// Source is pvc://claim/path/file.json (or a directory of files),
	// hf://org/dataset, modelscope://org/dataset or s3://bucket/key.
	Source string
	Format Format
	Kind   Kind
	// Split is the split to read (LLaMA-Factory's default: train).
	Split string
	// Samples caps how many records are used (num_samples); 0 is all.
	Samples int
	// Columns renames columns, LLaMA-Factory key → column name (prompt,
	// query, response, messages, system, chosen, rejected, kto_tag ...).
	// A columns map replaces all of LLaMA-Factory's defaults, so llm
	// renders, beside these, every column the format reads for the kind
	// under its default name (Alpaca: instruction, input, output, and
	// chosen, rejected or label; ShareGPT: conversations).
	Columns map[string]string
}

// InstructionData is an instruction dataset for SFT.
func InstructionData(name, source string, format Format) Dataset {
	return Dataset{Name: name, Source: source, Format: format, Kind: Instructions}
}

// PreferenceData is a dataset of chosen/rejected pairs for reward models,
// DPO, ORPO and SimPO (ranking: true in dataset_info.json).
func PreferenceData(name, source string, format Format) Dataset {
	return Dataset{Name: name, Source: source, Format: format, Kind: Preferences}
}

// KTOData is a dataset of responses labelled good or bad (a boolean
// kto_tag column, named "label" unless Columns says otherwise).
func KTOData(name, source string, format Format) Dataset {
	return Dataset{Name: name, Source: source, Format: format, Kind: KTOLabels}
}
