package market

import (
	"errors"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/serve"
)

// Serve returns a vLLM Service named name for the entry: the version's
// artifact is the source (pvc://, hf:// with its revision, s3:// or
// modelscope://), the planner sizes it for hw from the architecture of the
// version's base model (serve's Auto with opts), the served model name is
// the registry model's, and every object is labelled with the model and
// version number (LabelModel, LabelVersion) so a cluster tells which
// version it serves. Applying the result under the same name after a
// promotion rolls the release to the new version. The Service takes every
// serve setting after it.
//
// A LoRA adapter (artifact format FormatLoRA) is served on its base
// weights (Entry.Base) with LoRA under the registry model's name; the base
// keeps its default served name.
//
// A version whose lineage reaches no catalogue model has no facts for the
// planner: give them with the Service's ModelFacts, or size it by hand.
//
// An embedding, reranking or classification model (Facts whose task does
// not generate text, such as BAAI/bge-m3) is served with TEI instead, on
// one device of hw; TEI is not planned, so opts are refused for it, and so
// is a LoRA adapter, which TEI cannot load.
//
// What the entry cannot be served as is an error with field paths, before
// any setting is chained: an adapter whose lineage names no base weights,
// plan options or an adapter for an encoder.
func (e *Entry) Serve(name string, hw hardware.Profile, opts ...serve.PlanOption) (*serve.Service, error) {
	if e == nil {
		return nil, errors.New("market: Entry is nil: use market.Get")
	}
	v := e.Version
	if e.HasFacts && !e.Facts.Generates() {
		return e.serveTEI(name, hw, len(opts))
	}
	var s *serve.Service
	if v.Artifact.Format == FormatLoRA {
		if e.Base == "" {
			return nil, field.ErrorList{field.Required(field.NewPath("spec", "model"),
				fmt.Sprintf("%s is a LoRA adapter whose base weights its lineage does not name", v.Ref()))}.ToAggregate()
		}
		s = serve.VLLM(name, e.Base).LoRA(v.Model, v.Artifact.URI)
	} else {
		s = serve.VLLM(name, v.Artifact.URI).ServedModelName(v.Model)
	}
	s.On(hw).Auto(opts...).Label(LabelModel, v.Model)
	if v.Number > 0 {
		s.Label(LabelVersion, strconv.Itoa(v.Number))
	}
	if e.HasFacts {
		s.ModelFacts(e.Facts)
	}
	return s, nil
}

// serveTEI serves an encoder with TEI.
func (e *Entry) serveTEI(name string, hw hardware.Profile, planOptions int) (*serve.Service, error) {
	v := e.Version
	var errs field.ErrorList
	if planOptions > 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "auto"), planOptions, fmt.Sprintf(
			"%s is %s %s model, served by TEI on one device without the planner: drop the plan options",
			e.Facts.Name, withArticle(string(e.Facts.Task)), e.Facts.Task)))
	}
	if v.Artifact.Format == FormatLoRA {
		errs = append(errs, field.Invalid(field.NewPath("spec", "model"), v.Ref(), "is a LoRA adapter of an encoder, which TEI cannot load: merge it into the weights first"))
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	s := serve.TEI(name, v.Artifact.URI).ServedModelName(v.Model).On(hw).Label(LabelModel, v.Model).ModelFacts(e.Facts)
	if v.Number > 0 {
		s.Label(LabelVersion, strconv.Itoa(v.Number))
	}
	return s, nil
}

// withArticle is the indefinite article of word.
func withArticle(word string) string {
	if word != "" && (word[0] == 'a' || word[0] == 'e' || word[0] == 'i' || word[0] == 'o' || word[0] == 'u') {
		return "an"
	}
	return "a"
}
