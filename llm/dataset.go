package llm

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/internal/urlcheck"
	"github.com/cubestudio/cube/serve"
)

// datasetInfo is one entry of dataset_info.json; keys from DatasetAttr and
// get_dataset_list (src/llamafactory/data/parser.py at v0.9.5).
type datasetInfo struct {
	HFHubURL      string            `json:"hf_hub_url,omitempty"`
	MSHubURL      string            `json:"ms_hub_url,omitempty"`
	CloudFileName string            `json:"cloud_file_name,omitempty"`
	FileName      string            `json:"file_name,omitempty"`
	Formatting    string            `json:"formatting"`
	Ranking       bool              `json:"ranking,omitempty"`
	Split         string            `json:"split,omitempty"`
	NumSamples    int               `json:"num_samples,omitempty"`
	Columns       map[string]string `json:"columns,omitempty"`
}

// columnKeys are the column keys DatasetAttr.join reads.
var columnKeys = []string{"prompt", "query", "response", "history", "messages", "system", "tools", "images", "videos", "audios", "chosen", "rejected", "kto_tag"}

// alpacaColumns are, by kind, the Alpaca columns the converter reads
// (data/converter.py at v0.9.5) with DatasetAttr's default names
// (data/parser.py:51-53): the instruction and input make the user turn;
// instructions and KTO labels read the response, preference pairs chosen
// and rejected instead.
var alpacaColumns = map[datasets.Kind]map[string]string{
	datasets.Instructions: {"prompt": "instruction", "query": "input", "response": "output"},
	datasets.Preferences:  {"prompt": "instruction", "query": "input"},
	datasets.KTOLabels:    {"prompt": "instruction", "query": "input", "response": "output"},
}

// datasetMount is a claim a dataset is read from.
type claimMount struct{ claim, mountPath string }

// dataRoot is where dataset claims are mounted: /data/<claim>.
const dataRoot = "/data"

// renderDataset checks d and returns its dataset_info entry and the claim
// to mount, if any; problems are reported under p.
func renderDataset(d datasets.Dataset, p *field.Path, want datasets.Kind) (datasetInfo, *claimMount, field.ErrorList) {
	var errs field.ErrorList
	if d.Name == "" || strings.ContainsAny(d.Name, ", \t\n") {
		errs = append(errs, field.Invalid(p.Child("name"), d.Name, "must be non-empty without commas or spaces (the dataset argument is a comma-separated list)"))
	}
	info := datasetInfo{Split: d.Split, NumSamples: d.Samples}
	switch d.Format {
	case datasets.Alpaca, datasets.ShareGPT:
		info.Formatting = string(d.Format)
	default:
		errs = append(errs, field.NotSupported(p.Child("format"), d.Format, []datasets.Format{datasets.Alpaca, datasets.ShareGPT}))
	}
	if d.Kind != want {
		errs = append(errs, field.Invalid(p.Child("kind"), d.Kind, fmt.Sprintf("this stage trains on %s", want)))
	}
	if strings.ContainsFunc(d.Split, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		// load_dataset's split (data/loader.py) is a name such as train or
		// a slice such as train[:10%]; whitespace fails only in the pod.
		errs = append(errs, field.Invalid(p.Child("split"), d.Split, "must be a split name or slice without spaces or control characters"))
	}
	if d.Samples < 0 {
		errs = append(errs, field.Invalid(p.Child("samples"), d.Samples, "must not be negative"))
	}
	columns := map[string]string{}
	switch {
	case d.Kind == datasets.Preferences:
		info.Ranking = true
		columns["chosen"], columns["rejected"] = "chosen", "rejected"
	case d.Kind == datasets.KTOLabels:
		columns["kto_tag"] = "label"
	}
	if d.Format == datasets.ShareGPT {
		columns["messages"] = "conversations"
	}
	if d.Format == datasets.Alpaca && (len(columns) > 0 || len(d.Columns) > 0) {
		// A columns map replaces every column: DatasetAttr.join
		// (data/parser.py:80 at v0.9.5) sets each one it does not name to
		// None, and the Alpaca converter then builds an empty prompt, drops
		// every SFT example (no response) or reads example[None] for KTO
		// (data/converter.py:94-117). So the map names the columns the
		// converter reads for the kind, under DatasetAttr's default names.
		for k, v := range alpacaColumns[d.Kind] {
			columns[k] = v
		}
	}
	for k, v := range d.Columns {
		known := false
		for _, c := range columnKeys {
			known = known || c == k
		}
		if !known {
			errs = append(errs, field.NotSupported(p.Child("columns").Key(k), k, columnKeys))
		}
		if v == "" {
			errs = append(errs, field.Required(p.Child("columns").Key(k), "a column name is required"))
		}
		columns[k] = v
	}
	if len(columns) > 0 {
		info.Columns = columns
	}

	var mount *claimMount
	sp := p.Child("source")
	if strings.HasPrefix(d.Source, "s3://") {
		// LLaMA-Factory reads s3:// and gs:// files through fsspec
		// (cloud_file_name, data/loader.py).
		// Credentials come from the pod's environment (Job's
		// EnvFromSecret), never from the URL, which is stored in the
		// ConfigMap in clear.
		u, err := url.Parse(d.Source)
		switch {
		case urlcheck.HasUserinfo(d.Source):
			errs = append(errs, field.Invalid(sp, urlcheck.Redact(d.Source), "must be s3://bucket/key without credentials: give them with Job().EnvFromSecret"))
		case err != nil:
			errs = append(errs, field.Invalid(sp, d.Source, "must be s3://bucket/key"))
		case u.Host == "" || strings.Trim(u.Path, "/") == "" || u.RawQuery != "" || u.Fragment != "":
			errs = append(errs, field.Invalid(sp, d.Source, "must be s3://bucket/key"))
		}
		info.CloudFileName = d.Source
		return info, nil, errs
	}
	src, err := serve.ParseSource(d.Source)
	if err != nil {
		errs = append(errs, field.Invalid(sp, d.Source, "must be pvc://claim/path, hf://org/dataset, modelscope://org/dataset or s3://bucket/key"))
		return info, nil, errs
	}
	switch src.Kind {
	case serve.SourceHuggingFace:
		if src.Revision != "" {
			errs = append(errs, field.Invalid(sp, d.Source, "a dataset revision is not supported by dataset_info.json"))
		}
		info.HFHubURL = src.Repo
	case serve.SourceModelScope:
		info.MSHubURL = src.Repo
	case serve.SourcePVC:
		if src.Path == "" {
			errs = append(errs, field.Invalid(sp, d.Source, "must name a file or directory on the claim: pvc://claim/path"))
		}
		mount = &claimMount{claim: src.Claim, mountPath: path.Join(dataRoot, src.Claim)}
		// An absolute file_name wins over dataset_dir in os.path.join
		// (data/loader.py joins dataset_dir and file_name).
		info.FileName = path.Join(mount.mountPath, src.Path)
	default:
		errs = append(errs, field.Invalid(sp, d.Source, "must be pvc://claim/path, hf://org/dataset, modelscope://org/dataset or s3://bucket/key"))
	}
	return info, mount, errs
}
