package serve

import "fmt"

// ServicePort is the port the Service exposes the engine's HTTP API on (0
// for a Service not made by a constructor).
func (s *Service) ServicePort() int32 {
	if s == nil || s.engine == nil {
		return 0
	}
	return s.engine.port
}

// EngineName is the engine's name, also the cube.dev/kind label of the
// objects: vllm, sglang, tgi, ollama, mindie or triton ("" for a Service
// not made by a constructor).
func (s *Service) EngineName() string {
	if s == nil || s.engine == nil {
		return ""
	}
	return s.engine.kind
}

// ServiceName is the name of the Kubernetes Service clients reach the
// engine's HTTP API through: the release name with "-api". It cannot be the
// release name itself: a multi-node replica is a LeaderWorkerSet of that
// name, and the LeaderWorkerSet controller creates the headless Service
// its pods' DNS names (LWS_LEADER_ADDRESS, <name>-0.<name>.<namespace>)
// live under only when no Service of that name exists yet
// (CreateHeadlessServiceIfNotExists, sigs.k8s.io/lws v0.8.0
// pkg/utils/controller/controller_utils.go). One name for every layout
// keeps the endpoint the same when Auto moves a model onto several nodes.
func (s *Service) ServiceName() string {
	if s == nil {
		return ""
	}
	return s.Name() + "-api"
}

// Endpoint is the in-cluster URL of the service's HTTP API, for NewClient:
// http://<name>-api.<namespace>:<port> (see ServiceName), or
// http://<name>-api:<port> from the same namespace when none was set; ""
// for a Service not made by a constructor.
func (s *Service) Endpoint() string {
	if s.unmade() != nil {
		return ""
	}
	host := s.ServiceName()
	if ns := s.NamespaceName(); ns != "" {
		host += "." + ns
	}
	return fmt.Sprintf("http://%s:%d", host, s.engine.port)
}
