package serve

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/market"
)

// FromMarket returns a vLLM Service named name for a model the market
// found (market.Get): the version's artifact is the source (pvc://, hf://
// with its revision, s3:// or modelscope://), the planner sizes it for hw
// from the architecture of the version's base model (Auto with opts), the
// served model name is the registry model's, and every object is labelled
// with the model and version number (market.LabelModel, LabelVersion) so
// a cluster tells which version it serves. Applying the result under the
// same name after a promotion rolls the release to the new version.
//
// A LoRA adapter (artifact format market.FormatLoRA) is served on its base
// weights (Entry.Base) with LoRA under the registry model's name; the base
// keeps its default served name.
//
// A version whose lineage reaches no catalogue model has no facts for the
// planner: give them with ModelFacts, or size the service by hand.
//
// An embedding, reranking or classification model (a Facts whose task does
// not generate text, such as BAAI/bge-m3) is served with TEI instead, on
// one device of hw; TEI is not planned, so opts are refused for it, and so
// is a LoRA adapter, which TEI cannot load.
func FromMarket(name string, e *market.Entry, hw hardware.Profile, opts ...PlanOption) *Service {
	if e == nil {
		s := VLLM(name, "")
		s.fail(field.Required(field.NewPath("spec", "model"), "a market entry is required: market.Get"))
		return s
	}
	v := e.Version
	if e.HasFacts && !e.Facts.Generates() {
		return fromMarketTEI(name, e, hw, len(opts))
	}
	var s *Service
	if v.Artifact.Format == market.FormatLoRA {
		s = VLLM(name, e.Base).LoRA(v.Model, v.Artifact.URI)
		if e.Base == "" {
			s.fail(field.Required(field.NewPath("spec", "model"),
				fmt.Sprintf("%s is a LoRA adapter whose base weights its lineage does not name", v.Ref())))
		}
	} else {
		s = VLLM(name, v.Artifact.URI).ServedModelName(v.Model)
	}
	s.On(hw).Auto(opts...).Label(market.LabelModel, v.Model)
	if v.Number > 0 {
		s.Label(market.LabelVersion, strconv.Itoa(v.Number))
	}
	if e.HasFacts {
		s.ModelFacts(e.Facts)
	}
	return s
}

// fromMarketTEI serves an encoder the market found with TEI.
func fromMarketTEI(name string, e *market.Entry, hw hardware.Profile, planOptions int) *Service {
	v := e.Version
	s := TEI(name, v.Artifact.URI).ServedModelName(v.Model).On(hw).Label(market.LabelModel, v.Model).ModelFacts(e.Facts)
	if v.Number > 0 {
		s.Label(market.LabelVersion, strconv.Itoa(v.Number))
	}
	if planOptions > 0 {
		s.fail(field.Invalid(field.NewPath("spec", "auto"), planOptions, fmt.Sprintf(
			"%s is a%s %s model, served by TEI on one device without the planner: drop the plan options", e.Facts.Name,
			article(string(e.Facts.Task)), e.Facts.Task)))
	}
	if v.Artifact.Format == market.FormatLoRA {
		s.fail(field.Invalid(field.NewPath("spec", "model"), v.Ref(), "is a LoRA adapter of an encoder, which TEI cannot load: merge it into the weights first"))
	}
	return s
}
