package serve

import (
	"errors"
	"fmt"

	"github.com/cubestudio/cube/internal/podspec"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// URL is the in-cluster URL of s's HTTP API, what inference.NewClient (or
// any OpenAI-compatible client) is given: http://<name>-api.<namespace>:<port>,
// or http://<name>-api:<port> for a client in the same namespace when s has
// none. The Kubernetes Service is <name>-api, not <name>: a multi-node
// replica is a LeaderWorkerSet of the release's name, and the LeaderWorkerSet
// controller creates the headless Service its pods' DNS names
// (LWS_LEADER_ADDRESS, <name>-0.<name>.<namespace>) live under only when no
// Service of that name exists yet (CreateHeadlessServiceIfNotExists,
// sigs.k8s.io/lws v0.8.0 pkg/utils/controller/controller_utils.go). One name
// for every layout keeps the URL the same when Auto moves a model onto
// several nodes.
//
// It is a function, not a method, because a Service's methods are its
// settings. It fails for a nil Service or one not made by a constructor;
// it does not validate the rest (Objects does).
func URL(s *Service) (string, error) {
	if err := s.unmade(); err != nil {
		return "", err
	}
	return s.url(podspec.Of(&s.Handle).NamespaceName()), nil
}

// url is the in-cluster URL of s's HTTP API from namespace ns (or from
// s's own namespace when ns is empty).
func (s *Service) url(ns string) string {
	host := s.serviceName()
	if ns != "" {
		host += "." + ns
	}
	return fmt.Sprintf("http://%s:%d", host, s.engine.port)
}

// AutoPlan is the plan Auto sizes s with: the layout Objects renders and
// what each device's memory holds (PlanResult.String prints it). It fails
// like Objects, and when s does not use Auto.
func AutoPlan(s *Service) (PlanResult, error) {
	if err := s.unmade(); err != nil {
		return PlanResult{}, err
	}
	if s.auto == nil {
		return PlanResult{}, field.ErrorList{field.Required(field.NewPath("spec", "auto"),
			"the service is not sized by the planner: call Auto")}.ToAggregate()
	}
	_, r, errs := s.render()
	if len(errs) > 0 {
		return PlanResult{}, dedupe(errs).ToAggregate()
	}
	if r.plan == nil {
		return PlanResult{}, field.ErrorList{field.InternalError(field.NewPath("spec", "auto"), errors.New("no plan was made"))}.ToAggregate()
	}
	return *r.plan, nil
}

// servicePort is the port the Service exposes the engine's HTTP API on.
func (s *Service) servicePort() int32 { return s.engine.port }

// serviceName names the Kubernetes Service clients reach the engine
// through: the release name with "-api" (see URL for why).
func (s *Service) serviceName() string { return podspec.Of(&s.Handle).Name() + "-api" }
