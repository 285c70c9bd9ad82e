package serve

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MindIEConfig is MindIE Server's config.json
// ({MindIE}/latest/mindie-service/conf/config.json), with the field names of
// Huawei's "配置参数说明（服务化）" reference (MindIE LLM 2.x). The Service
// renders it into a ConfigMap and points MIES_CONFIG_JSON_PATH at it;
// DefaultMindIEConfig holds the documented defaults and ConfigureMindIE
// edits the rendered one.
type MindIEConfig struct {
	Version       string              `json:"Version"`
	ServerConfig  MindIEServerConfig  `json:"ServerConfig"`
	BackendConfig MindIEBackendConfig `json:"BackendConfig"`
}

// MindIEServerConfig is the endpoint: addresses, ports, TLS and timeouts.
// The Service sets MIES_CONTAINER_IP and MIES_CONTAINER_MANAGEMENT_IP to the
// pod IP, which take precedence over IPAddress and ManagementIPAddress.
type MindIEServerConfig struct {
	IPAddress               string `json:"ipAddress"`
	ManagementIPAddress     string `json:"managementIpAddress"`
	Port                    int32  `json:"port"`
	ManagementPort          int32  `json:"managementPort"`
	MetricsPort             int32  `json:"metricsPort"`
	AllowAllZeroIPListening bool   `json:"allowAllZeroIpListening"`
	MaxLinkNum              int    `json:"maxLinkNum"`
	// HTTPSEnabled is false in cube's default: TLS terminates at the
	// gateway or mesh, and MindIE's own needs certificates in the image.
	HTTPSEnabled          bool     `json:"httpsEnabled"`
	FullTextEnabled       bool     `json:"fullTextEnabled"`
	TLSCaPath             string   `json:"tlsCaPath"`
	TLSCaFile             []string `json:"tlsCaFile"`
	TLSCert               string   `json:"tlsCert"`
	TLSPk                 string   `json:"tlsPk"`
	TLSPkPwd              string   `json:"tlsPkPwd"`
	TLSCrlPath            string   `json:"tlsCrlPath"`
	TLSCrlFiles           []string `json:"tlsCrlFiles"`
	ManagementTLSCaFile   []string `json:"managementTlsCaFile"`
	ManagementTLSCert     string   `json:"managementTlsCert"`
	ManagementTLSPk       string   `json:"managementTlsPk"`
	ManagementTLSPkPwd    string   `json:"managementTlsPkPwd"`
	ManagementTLSCrlPath  string   `json:"managementTlsCrlPath"`
	ManagementTLSCrlFiles []string `json:"managementTlsCrlFiles"`
	KmcKsfMaster          string   `json:"kmcKsfMaster"`
	KmcKsfStandby         string   `json:"kmcKsfStandby"`
	// InferMode is "standard" (prefill and decode together) or "dmi"
	// (disaggregated).
	InferMode            string   `json:"inferMode"`
	InterCommTLSEnabled  bool     `json:"interCommTLSEnabled"`
	InterCommPort        int32    `json:"interCommPort"`
	InterCommTLSCaPath   string   `json:"interCommTlsCaPath"`
	InterCommTLSCaFiles  []string `json:"interCommTlsCaFiles"`
	InterCommTLSCert     string   `json:"interCommTlsCert"`
	InterCommPk          string   `json:"interCommPk"`
	InterCommPkPwd       string   `json:"interCommPkPwd"`
	InterCommTLSCrlPath  string   `json:"interCommTlsCrlPath"`
	InterCommTLSCrlFiles []string `json:"interCommTlsCrlFiles"`
	// OpenAISupport "vllm" serves /v1/chat/completions vLLM-style.
	OpenAISupport       string `json:"openAiSupport"`
	TokenTimeout        int    `json:"tokenTimeout"`
	E2ETimeout          int    `json:"e2eTimeout"`
	DistDPServerEnabled bool   `json:"distDPServerEnabled"`
}

// MindIEBackendConfig is the inference backend: devices, multi-node
// settings, the model and the scheduler.
type MindIEBackendConfig struct {
	BackendName         string `json:"backendName"`
	ModelInstanceNumber int    `json:"modelInstanceNumber"`
	// NPUDeviceIDs are the logical NPU ids of each model instance; across
	// nodes the rank table decides instead.
	NPUDeviceIDs           [][]int  `json:"npuDeviceIds"`
	TokenizerProcessNumber int      `json:"tokenizerProcessNumber"`
	MultiNodesInferEnabled bool     `json:"multiNodesInferEnabled"`
	MultiNodesInferPort    int32    `json:"multiNodesInferPort"`
	InterNodeTLSEnabled    bool     `json:"interNodeTLSEnabled"`
	InterNodeTLSCaPath     string   `json:"interNodeTlsCaPath"`
	InterNodeTLSCaFiles    []string `json:"interNodeTlsCaFiles"`
	InterNodeTLSCert       string   `json:"interNodeTlsCert"`
	InterNodeTLSPk         string   `json:"interNodeTlsPk"`
	InterNodeTLSPkPwd      string   `json:"interNodeTlsPkPwd"`
	InterNodeTLSCrlPath    string   `json:"interNodeTlsCrlPath"`
	InterNodeTLSCrlFiles   []string `json:"interNodeTlsCrlFiles"`
	InterNodeKmcKsfMaster  string   `json:"interNodeKmcKsfMaster"`
	InterNodeKmcKsfStandby string   `json:"interNodeKmcKsfStandby"`

	ModelDeployConfig MindIEModelDeployConfig `json:"ModelDeployConfig"`
	ScheduleConfig    MindIEScheduleConfig    `json:"ScheduleConfig"`
}

// MindIEModelDeployConfig bounds sequence lengths and lists the models.
type MindIEModelDeployConfig struct {
	MaxSeqLen        int                 `json:"maxSeqLen"`
	MaxInputTokenLen int                 `json:"maxInputTokenLen"`
	Truncation       bool                `json:"truncation"`
	ModelConfig      []MindIEModelConfig `json:"ModelConfig"`
}

// MindIEModelConfig is one model: its name, weights and world size.
type MindIEModelConfig struct {
	ModelInstanceType string `json:"modelInstanceType"`
	// ModelName is what clients send as "model".
	ModelName string `json:"modelName"`
	// ModelWeightPath is the directory of the weights and config.json.
	ModelWeightPath string `json:"modelWeightPath"`
	// WorldSize is the NPUs the model is split across (tensor parallel).
	WorldSize int `json:"worldSize"`
	// CPUMemSize and NPUMemSize bound the KV cache in GB (-1: automatic,
	// from NPU_MEMORY_FRACTION).
	CPUMemSize      int    `json:"cpuMemSize"`
	NPUMemSize      int    `json:"npuMemSize"`
	BackendType     string `json:"backendType"`
	TrustRemoteCode bool   `json:"trustRemoteCode"`
	// PluginParams switches plugins, e.g. {"plugin_type":"prefix_cache"}.
	PluginParams string `json:"plugin_params,omitempty"`
}

// MindIEScheduleConfig is the continuous-batching scheduler.
type MindIEScheduleConfig struct {
	TemplateType              string `json:"templateType"`
	TemplateName              string `json:"templateName"`
	CacheBlockSize            int    `json:"cacheBlockSize"`
	MaxPrefillBatchSize       int    `json:"maxPrefillBatchSize"`
	MaxPrefillTokens          int    `json:"maxPrefillTokens"`
	PrefillTimeMsPerReq       int    `json:"prefillTimeMsPerReq"`
	PrefillPolicyType         int    `json:"prefillPolicyType"`
	DecodeTimeMsPerReq        int    `json:"decodeTimeMsPerReq"`
	DecodePolicyType          int    `json:"decodePolicyType"`
	MaxBatchSize              int    `json:"maxBatchSize"`
	MaxIterTimes              int    `json:"maxIterTimes"`
	MaxPreemptCount           int    `json:"maxPreemptCount"`
	SupportSelectBatch        bool   `json:"supportSelectBatch"`
	MaxQueueDelayMicroseconds int    `json:"maxQueueDelayMicroseconds"`
	EnablePrefixCache         bool   `json:"enablePrefixCache,omitempty"`
}

// MindIE's ports: the business (OpenAI) API, the management API (health)
// and Prometheus metrics, and the ports between nodes.
const (
	MindIEPort           = 1025
	MindIEManagementPort = 1026
	MindIEMetricsPort    = 1027
	MindIEMultiNodePort  = 1120
	MindIEInterCommPort  = 1121
)

// DefaultMindIEConfig returns the documented defaults of config.json, with
// HTTPS and inter-node TLS switched off (see MindIEServerConfig.HTTPSEnabled).
func DefaultMindIEConfig() MindIEConfig {
	crl := func() []string { return []string{"server_crl.pem"} }
	ca := func() []string { return []string{"ca.pem"} }
	return MindIEConfig{
		Version: "1.0.0",
		ServerConfig: MindIEServerConfig{
			IPAddress: "127.0.0.1", ManagementIPAddress: "127.0.0.2",
			Port: MindIEPort, ManagementPort: MindIEManagementPort, MetricsPort: MindIEMetricsPort,
			MaxLinkNum: 1000,
			TLSCaPath:  "security/ca/", TLSCaFile: ca(),
			TLSCert: "security/certs/server.pem", TLSPk: "security/keys/server.key.pem",
			TLSPkPwd: "security/pass/key_pwd.txt", TLSCrlPath: "security/certs/", TLSCrlFiles: crl(),
			ManagementTLSCaFile:   []string{"management_ca.pem"},
			ManagementTLSCert:     "security/certs/management/server.pem",
			ManagementTLSPk:       "security/keys/management/server.key.pem",
			ManagementTLSPkPwd:    "security/pass/management/key_pwd.txt",
			ManagementTLSCrlPath:  "security/management/certs/",
			ManagementTLSCrlFiles: crl(),
			KmcKsfMaster:          "tools/pmt/master/ksfa", KmcKsfStandby: "tools/pmt/standby/ksfb",
			InferMode:          "standard",
			InterCommPort:      MindIEInterCommPort,
			InterCommTLSCaPath: "security/grpc/ca/", InterCommTLSCaFiles: ca(),
			InterCommTLSCert: "security/grpc/certs/server.pem", InterCommPk: "security/grpc/keys/server.key.pem",
			InterCommPkPwd: "security/grpc/pass/key_pwd.txt", InterCommTLSCrlPath: "security/grpc/certs/",
			InterCommTLSCrlFiles: crl(),
			OpenAISupport:        "vllm", TokenTimeout: 600, E2ETimeout: 600,
		},
		BackendConfig: MindIEBackendConfig{
			BackendName:            "mindieservice_llm_engine",
			ModelInstanceNumber:    1,
			NPUDeviceIDs:           [][]int{{0, 1, 2, 3}},
			TokenizerProcessNumber: 8,
			MultiNodesInferPort:    MindIEMultiNodePort,
			InterNodeTLSCaPath:     "security/grpc/ca/", InterNodeTLSCaFiles: ca(),
			InterNodeTLSCert: "security/grpc/certs/server.pem", InterNodeTLSPk: "security/grpc/keys/server.key.pem",
			InterNodeTLSPkPwd:   "security/grpc/pass/mindie_server_key_pwd.txt",
			InterNodeTLSCrlPath: "security/grpc/certs/", InterNodeTLSCrlFiles: crl(),
			InterNodeKmcKsfMaster: "tools/pmt/master/ksfa", InterNodeKmcKsfStandby: "tools/pmt/standby/ksfb",
			ModelDeployConfig: MindIEModelDeployConfig{
				MaxSeqLen: 2560, MaxInputTokenLen: 2048,
				ModelConfig: []MindIEModelConfig{{
					ModelInstanceType: "Standard", ModelName: "llama_65b",
					ModelWeightPath: "/data/atb_testdata/weights/llama1-65b-safetensors",
					WorldSize:       4, CPUMemSize: 5, NPUMemSize: -1, BackendType: "atb",
				}},
			},
			ScheduleConfig: MindIEScheduleConfig{
				TemplateType: "Standard", TemplateName: "Standard_LLM", CacheBlockSize: 128,
				MaxPrefillBatchSize: 50, MaxPrefillTokens: 8192, PrefillTimeMsPerReq: 150,
				DecodeTimeMsPerReq: 50, MaxBatchSize: 200, MaxIterTimes: 512,
				MaxQueueDelayMicroseconds: 5000,
			},
		},
	}
}

// mindieEngine is Huawei MindIE Server (mindieservice_daemon) on Ascend
// NPUs. It loads weights from a directory and is configured by config.json.
var mindieEngine = &engine{
	kind: "mindie", title: "MindIE",
	image: DefaultMindIEImage, ascendImage: DefaultMindIEImage,
	ascend: true,
	port:   MindIEPort,
	ports: []corev1.ContainerPort{
		{Name: "management", ContainerPort: MindIEManagementPort, Protocol: corev1.ProtocolTCP},
		{Name: "metrics", ContainerPort: MindIEMetricsPort, Protocol: corev1.ProtocolTCP},
	},
	// The management API's health probe answers once inference works.
	readyPath: "/health/timed-3", readyPort: MindIEManagementPort,
	metricsPath: "/metrics", metricsPort: MindIEMetricsPort,
	bare:    SourceHuggingFace,
	sources: []SourceKind{SourcePVC, SourceS3},
	flags: flagSet{
		tensorParallel:    "worldSize",
		maxModelLen:       "maxSeqLen",
		memoryUtilization: "NPU_MEMORY_FRACTION",
		servedModelName:   "modelName",
		trustRemoteCode:   "trustRemoteCode",
		prefixOn:          "enablePrefixCache",
		prefixOff:         "enablePrefixCache",
	},
	// MindIE's own default, 2560, is short for chat; cube asks for 4096.
	defaultMaxLen: 4096,
	autoSizes:     true, plannedFraction: true, multiNode: true,
}

func init() { mindieEngine.launch = launchMindIE }

// Where the MindIE pods find their files.
const (
	// MindIEConfigPath is where the ConfigMap with config.json is mounted.
	MindIEConfigPath = "/etc/mindie"
	// RankTablePath is where the rank table ConfigMap is mounted, the path
	// Ascend's operator and samples use; RANKTABLEFILE names hccl.json in it.
	RankTablePath = "/user/serverid/devindex/config"
)

// mindieScript sources the CANN, ATB and MindIE environments of the image,
// waits for a complete rank table when one is used, and starts the daemon.
const mindieScript = `for f in /usr/local/Ascend/ascend-toolkit/set_env.sh /usr/local/Ascend/nnal/atb/set_env.sh \
         /usr/local/Ascend/atb-models/set_env.sh /usr/local/Ascend/mindie/set_env.sh; do
  if [ -f "$f" ]; then . "$f"; fi
done
if [ -n "$RANKTABLEFILE" ]; then
  until grep -q '"status": *"completed"' "$RANKTABLEFILE" 2>/dev/null; do
    echo "waiting for a completed rank table in $RANKTABLEFILE"; sleep 5
  done
fi
cd /usr/local/Ascend/mindie/latest/mindie-service && exec ./bin/mindieservice_daemon`

// mindieModelName is the modelName rule of MindIE's reference.
var mindieModelName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)

func launchMindIE(s *Service, r *rendering) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if !mindieModelName.MatchString(r.servedName) || len(r.servedName) > 256 {
		errs = append(errs, field.Invalid(spec.Child("servedModelName"), r.servedName,
			"MindIE model names hold letters, digits, '-', '.' and '_', start and end with a letter or digit, at most 256 characters"))
	}
	cfg := DefaultMindIEConfig()
	be := &cfg.BackendConfig
	model := &be.ModelDeployConfig.ModelConfig[0]
	model.ModelName = r.servedName
	model.ModelWeightPath = r.modelArg
	model.WorldSize = r.tp
	model.TrustRemoteCode = s.trustRemoteCode
	// More devices than a node holds are reported by checkPlacement; the
	// list stays a node's worth rather than growing with the bad count.
	perPod := max(r.devices, 1)
	if !r.hasProfile || r.profile.MaxPerNode < 1 {
		perPod = 1
	} else if perPod > r.profile.MaxPerNode {
		perPod = r.profile.MaxPerNode
	}
	devices := make([]int, perPod)
	for i := range devices {
		devices[i] = i
	}
	be.NPUDeviceIDs = [][]int{devices}
	deploy := &be.ModelDeployConfig
	deploy.MaxSeqLen = r.maxModelLen
	deploy.MaxInputTokenLen = r.maxModelLen - 1
	sched := &be.ScheduleConfig
	sched.MaxIterTimes = r.maxModelLen
	sched.MaxPrefillTokens = max(sched.MaxPrefillTokens, r.maxModelLen)
	if s.prefixCaching != nil && *s.prefixCaching {
		sched.EnablePrefixCache = true
		model.PluginParams = `{"plugin_type":"prefix_cache"}`
	}

	configFile := path.Join(MindIEConfigPath, "config.json")
	r.env = append(r.env,
		corev1.EnvVar{Name: "MIES_CONFIG_JSON_PATH", Value: configFile},
		fieldEnv("MIES_CONTAINER_IP", "status.podIP"),
		fieldEnv("MIES_CONTAINER_MANAGEMENT_IP", "status.podIP"),
		corev1.EnvVar{Name: "MIES_SERVICE_MONITOR_MODE", Value: "1"},
		corev1.EnvVar{Name: "MINDIE_LOG_TO_STDOUT", Value: "1"},
		// ConfigMap and volume files belong to root, not to MindIE's user.
		corev1.EnvVar{Name: "MINDIE_CHECK_INPUTFILES_PERMISSION", Value: "0"})
	if r.memoryUtilization > 0 {
		r.env = append(r.env, corev1.EnvVar{Name: "NPU_MEMORY_FRACTION", Value: strconv.FormatFloat(r.memoryUtilization, 'g', -1, 64)})
	}
	r.command = []string{"/bin/bash", "-c", mindieScript}

	if r.nodes > 1 {
		// Across 910B nodes: one world of every NPU of the group, ranks and
		// device IPs from the rank table, HCCL over the NPUs' RoCE ports
		// (the default fabric across Ascend nodes, see render).
		be.MultiNodesInferEnabled = true
		table := s.rankTable
		if table == "" {
			// Only Ascend's operator fills rings-config-<job>, and only for
			// AscendJobs, Volcano Jobs and Deployments (mind-cluster
			// ascend-operator pkg/controllers/v1 consts.go, deployhandler.go);
			// nothing fills it for a LeaderWorkerSet group, whose pods would wait
			// for a completed table forever. The table needs each NPU's
			// device IP, known only on the nodes (hccn.conf), so cube cannot
			// write it either.
			errs = append(errs, field.Required(spec.Child("rankTable"), fmt.Sprintf(
				"MindIE across %d nodes reads its ranks and NPU device IPs from an HCCL rank table that nothing fills for a LeaderWorkerSet: "+
					"create a ConfigMap with hccl.json (status \"completed\") for the group's nodes and name it with RankTable, or serve on one node", r.nodes)))
		}
		tableFile := path.Join(RankTablePath, "hccl.json")
		r.env = append(r.env,
			corev1.EnvVar{Name: "RANKTABLEFILE", Value: tableFile},
			corev1.EnvVar{Name: "RANK_TABLE_FILE", Value: tableFile},
			corev1.EnvVar{Name: "WORLD_SIZE", Value: strconv.Itoa(r.tp)},
			corev1.EnvVar{Name: "ATB_LLM_HCCL_ENABLE", Value: "1"},
			corev1.EnvVar{Name: "ATB_LLM_COMM_BACKEND", Value: "hccl"})
		r.volumes = append(r.volumes, corev1.Volume{Name: "rank-table", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: table}},
		}})
		r.mounts = append(r.mounts, corev1.VolumeMount{Name: "rank-table", MountPath: RankTablePath, ReadOnly: true})
		r.hostNetwork = true
		r.workerCommand = r.command
	} else if s.rankTable != "" {
		errs = append(errs, field.Invalid(spec.Child("rankTable"), s.rankTable, "a rank table is for a replica across nodes (Nodes or Auto)"))
	}

	for _, edit := range s.mindIEConfig {
		edit(&cfg)
	}
	if len(cfg.BackendConfig.ModelDeployConfig.ModelConfig) == 0 {
		errs = append(errs, field.Required(spec.Child("mindIEConfig", "BackendConfig", "ModelDeployConfig", "ModelConfig"), "MindIE needs one model"))
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return append(errs, field.InternalError(spec.Child("mindIEConfig"), fmt.Errorf("encode config.json: %w", err)))
	}
	r.files = map[string]string{"config.json": string(data) + "\n"}
	r.configMount = MindIEConfigPath
	return errs
}

// RankTable names the ConfigMap holding MindIE's multi-node rank table
// (key hccl.json, the Ascend operator's format, with "status":
// "completed"), which a MindIE replica across nodes requires: Ascend's
// operator fills rings-config-<job> only for the owners it watches
// (AscendJobs, Volcano Jobs and Deployments: acjobKind, vcjobKind and
// deployKind in mind-cluster component/ascend-operator/pkg/controllers/v1/
// consts.go), never for the LeaderWorkerSet cube renders, and the table's
// NPU device IPs are known only on the nodes. MindIE only.
func (s *Service) RankTable(configMap string) *Service {
	if s == nil {
		return nil
	}
	s.use("rankTable")
	s.rankTable = configMap
	return s
}

// ConfigureMindIE edits the MindIE config.json after the Service has filled
// it (model, devices, ports, lengths), for the settings it has no method
// for, such as ScheduleConfig.MaxBatchSize. MindIE only.
func (s *Service) ConfigureMindIE(edit func(*MindIEConfig)) *Service {
	if s == nil {
		return nil
	}
	s.use("configureMindIE")
	if edit == nil {
		s.fail(field.Required(field.NewPath("spec", "mindIEConfig"), "edit function is nil"))
		return s
	}
	s.mindIEConfig = append(s.mindIEConfig, edit)
	return s
}
