// Package modelsource is where a model's weights come from, written once
// for the builders that fetch them (serve's Service and market's
// DownloadJob): the Hugging Face, ModelScope and S3 settings (tokens,
// endpoints, region) with their checks and field paths, the environment
// the downloaders read them from, and the checks of the parts of a source
// URI (repository ids, revisions, buckets, paths on a volume).
//
// The environment variables are the downloaders' own: HF_TOKEN and
// HF_ENDPOINT (huggingface_hub, src/huggingface_hub/constants.py and
// utils/_auth.py, which vLLM, SGLang, TGI, TEI and the hf command all use),
// MODELSCOPE_API_TOKEN and MODELSCOPE_DOMAIN (modelscope, hub/api.py and
// hub/constants.py), and for S3 the AWS CLI's, which every s3:// download
// of cube runs (aws s3 sync): AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
// (EnvProvider, awscli/botocore/credentials.py), AWS_ENDPOINT_URL and
// AWS_DEFAULT_REGION (awscli/botocore/configprovider.py).
// market/testdata/contracts holds these facts with their files.
package modelsource
