package serve

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// settingNames lists, for messages, what each setting is called.
var settingNames = map[string]string{
	"tensorParallel":    "TensorParallel",
	"pipelineParallel":  "PipelineParallel",
	"maxModelLen":       "MaxModelLen",
	"memoryUtilization": "MemoryUtilization",
	"dtype":             "DType",
	"quantization":      "Quantization",
	"kvCacheDType":      "KVCacheDType",
	"prefixCaching":     "PrefixCaching",
	"lora":              "LoRA",
	"servedModelName":   "ServedModelName",
	"trustRemoteCode":   "TrustRemoteCode",
	"rankTable":         "RankTable",
	"configureMindIE":   "ConfigureMindIE",
	"modelControl":      "ModelControl",
	"tritonModels":      "AddTritonModel",
	"keepAlive":         "KeepAlive",
	"apiKey":            "APIKey",
}

// checkSupport reports every setting used that the engine does not have.
func (s *Service) checkSupport() field.ErrorList {
	e, f := s.engine, s.engine.flags
	supported := map[string]bool{
		"tensorParallel":    f.tensorParallel != "",
		"pipelineParallel":  f.pipelineParallel != "",
		"maxModelLen":       f.maxModelLen != "",
		"memoryUtilization": f.memoryUtilization != "",
		"dtype":             f.dtype != "",
		"quantization":      f.quantization != "",
		"kvCacheDType":      f.kvCacheDType != "",
		"prefixCaching":     f.prefixCachingSupported(),
		"lora":              len(e.loraSources) > 0,
		"servedModelName":   f.servedModelName != "",
		"trustRemoteCode":   f.trustRemoteCode != "",
		"rankTable":         e == mindieEngine,
		"configureMindIE":   e == mindieEngine,
		"modelControl":      isTriton(e),
		"tritonModels":      isTriton(e),
		"keepAlive":         e == ollamaEngine,
		"apiKey":            f.apiKeyEnv != "" || f.apiKey != "",
	}
	var errs field.ErrorList
	for _, name := range sortedKeys(s.set) {
		if !supported[name] {
			errs = append(errs, field.Forbidden(field.NewPath("spec", name),
				fmt.Sprintf("%s has no %s setting", e.title, settingNames[name])))
		}
	}
	if s.dtype != "" && len(f.dtypes) > 0 && !slices.Contains(f.dtypes, s.dtype) {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "dtype"), s.dtype, f.dtypes))
	}
	if s.kvCacheDType != "" && len(f.kvCacheDTypes) > 0 && !slices.Contains(f.kvCacheDTypes, s.kvCacheDType) {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "kvCacheDType"), s.kvCacheDType, f.kvCacheDTypes))
	}
	return errs
}
