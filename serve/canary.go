package serve

import (
	"fmt"
	"regexp"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pod"
)

// Split sends the traffic of one route to two versions of a served model by
// weight: a canary. It renders a Gateway API HTTPRoute
// (gateway.networking.k8s.io/v1, sigs.k8s.io/gateway-api v1.6.3) attached to
// an existing Gateway, whose two weighted backendRefs are the Services of
// the stable and the canary Service builders.
//
// cube pins sigs.k8s.io/gateway-api v1.6.3: v1.7.0 needs Go 1.27, which
// cube does not use. The route uses only standard-channel v1 fields
// (parentRefs, hostnames, path matches, weighted backendRefs, request
// timeouts), which later releases keep.
//
// The cluster needs a Gateway API implementation (Envoy Gateway, Istio,
// Cilium, NGINX Gateway Fabric, kgateway…) with the standard-channel CRDs
// installed and a Gateway that allows routes from the route's namespace.
// The two versions are separate releases: apply them, then the split.
type Split struct {
	pod.Meta[Split]
	stable, canary *Service
	stableWeight   int
	canaryWeight   int
	gateway        string
	gatewayNS      string
	listener       string
	hostnames      []string
	pathPrefix     string
	timeout        *time.Duration
}

// Canary splits the route name between stable and canary. All traffic goes
// to stable until Weights says otherwise.
func Canary(name string, stable, canary *Service) *Split {
	c := &Split{stable: stable, canary: canary, stableWeight: 100, pathPrefix: "/"}
	podspec.Of(&c.Handle).InitMeta(c, "canary", name)
	return c
}

// Weights sets the percentages of requests each version gets; they must add
// up to 100 (90, 10 sends one request in ten to the canary).
func (c *Split) Weights(stable, canary int) *Split {
	if c == nil {
		return nil
	}
	c.stableWeight, c.canaryWeight = stable, canary
	return c
}

// Gateway attaches the route to the Gateway name in namespace (empty: the
// route's own namespace).
func (c *Split) Gateway(name, namespace string) *Split {
	if c == nil {
		return nil
	}
	c.gateway, c.gatewayNS = name, namespace
	return c
}

// Listener attaches the route to one listener (sectionName) of the Gateway.
func (c *Split) Listener(name string) *Split {
	if c == nil {
		return nil
	}
	c.listener = name
	return c
}

// Hostnames restricts the route to requests for these host names; it
// replaces earlier ones.
func (c *Split) Hostnames(names ...string) *Split {
	if c == nil {
		return nil
	}
	c.hostnames = slices.Clone(names)
	return c
}

// PathPrefix routes only requests under prefix (default "/").
func (c *Split) PathPrefix(prefix string) *Split {
	if c == nil {
		return nil
	}
	c.pathPrefix = prefix
	return c
}

// RequestTimeout bounds a whole request at the gateway. Generation takes
// long; many gateways default to 15 seconds.
func (c *Split) RequestTimeout(d time.Duration) *Split {
	if c == nil {
		return nil
	}
	c.timeout = &d
	return c
}

// gatewayDuration is GEP-2257's duration format, which the CRD enforces.
var gatewayDuration = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)

// Objects returns the HTTPRoute.
func (c *Split) Objects() ([]client.Object, error) {
	route, err := c.Build()
	if err != nil {
		return nil, err
	}
	return []client.Object{route}, nil
}

// Build validates the split and returns a fresh HTTPRoute.
func (c *Split) Build() (*gatewayv1.HTTPRoute, error) {
	spec := field.NewPath("spec")
	if c == nil {
		return nil, field.ErrorList{field.Required(spec, "the Split is nil: make one with serve.Canary")}.ToAggregate()
	}
	errs := podspec.Of(&c.Handle).ValidateMeta(validation.DNS1123SubdomainMaxLength)
	if c.gateway == "" {
		errs = append(errs, field.Required(spec.Child("gateway"), "a Gateway to attach to is required: call Gateway"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(c.gateway) {
			errs = append(errs, field.Invalid(spec.Child("gateway"), c.gateway, msg))
		}
	}
	if c.gatewayNS != "" {
		for _, msg := range validation.IsDNS1123Label(c.gatewayNS) {
			errs = append(errs, field.Invalid(spec.Child("gatewayNamespace"), c.gatewayNS, msg))
		}
	}
	wp := spec.Child("weights")
	switch {
	case c.stableWeight < 0 || c.canaryWeight < 0:
		errs = append(errs, field.Invalid(wp, []int{c.stableWeight, c.canaryWeight}, "must not be negative"))
	case c.stableWeight+c.canaryWeight != 100:
		errs = append(errs, field.Invalid(wp, []int{c.stableWeight, c.canaryWeight},
			fmt.Sprintf("are percentages and must add up to 100, not %d", c.stableWeight+c.canaryWeight)))
	}
	versions := []struct {
		name string
		svc  *Service
	}{{"stable", c.stable}, {"canary", c.canary}}
	for _, v := range versions {
		switch {
		case v.svc == nil:
			errs = append(errs, field.Required(spec.Child(v.name), "the "+v.name+" Service is nil"))
		case v.svc.unmade() != nil:
			errs = append(errs, field.Required(spec.Child(v.name), "the "+v.name+" Service was not made by a constructor (serve.VLLM, SGLang…)"))
		case podspec.Of(&v.svc.Handle).NamespaceName() != podspec.Of(&c.Handle).NamespaceName():
			// A cross-namespace backendRef needs a ReferenceGrant.
			errs = append(errs, field.Invalid(spec.Child(v.name, "namespace"), podspec.Of(&v.svc.Handle).NamespaceName(),
				fmt.Sprintf("must be the route's namespace %q", podspec.Of(&c.Handle).NamespaceName())))
		}
	}
	if c.stable != nil && c.canary != nil && podspec.Of(&c.stable.Handle).Name() == podspec.Of(&c.canary.Handle).Name() {
		errs = append(errs, field.Duplicate(spec.Child("canary", "name"), podspec.Of(&c.canary.Handle).Name()))
	}
	for i, h := range c.hostnames {
		for _, msg := range validation.IsDNS1123Subdomain(h) {
			if len(h) < 2 || h[:2] != "*." {
				errs = append(errs, field.Invalid(spec.Child("hostnames").Index(i), h, msg))
			}
		}
	}
	if len(c.pathPrefix) == 0 || c.pathPrefix[0] != '/' {
		errs = append(errs, field.Invalid(spec.Child("pathPrefix"), c.pathPrefix, "must start with '/'"))
	}
	var timeout *gatewayv1.Duration
	if c.timeout != nil {
		d := gatewayv1.Duration(formatGatewayDuration(*c.timeout))
		if *c.timeout <= 0 || *c.timeout%time.Millisecond != 0 || !gatewayDuration.MatchString(string(d)) {
			errs = append(errs, field.Invalid(spec.Child("requestTimeout"), c.timeout.String(), "must be a positive whole number of milliseconds below 100000 hours"))
		}
		timeout = &d
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}

	parent := gatewayv1.ParentReference{Name: gatewayv1.ObjectName(c.gateway)}
	if c.gatewayNS != "" {
		parent.Namespace = ptr.To(gatewayv1.Namespace(c.gatewayNS))
	}
	if c.listener != "" {
		parent.SectionName = ptr.To(gatewayv1.SectionName(c.listener))
	}
	var hostnames []gatewayv1.Hostname
	for _, h := range c.hostnames {
		hostnames = append(hostnames, gatewayv1.Hostname(h))
	}
	// The weights were checked above: 0 to 100 each.
	backend := func(s *Service, weight int) gatewayv1.HTTPBackendRef {
		return gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{
				Name: gatewayv1.ObjectName(s.ServiceName()),
				Port: ptr.To(s.ServicePort()),
			},
			Weight: ptr.To(int32(weight)),
		}}
	}
	rule := gatewayv1.HTTPRouteRule{
		Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{
			Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To(c.pathPrefix),
		}}},
		BackendRefs: []gatewayv1.HTTPBackendRef{backend(c.stable, c.stableWeight), backend(c.canary, c.canaryWeight)},
	}
	if timeout != nil {
		rule.Timeouts = &gatewayv1.HTTPRouteTimeouts{Request: timeout}
	}
	return &gatewayv1.HTTPRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: gatewayv1.GroupVersion.String(), Kind: "HTTPRoute"},
		ObjectMeta: podspec.Of(&c.Handle).ObjectMeta(podspec.Of(&c.Handle).Name()),
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{parent}},
			Hostnames:       hostnames,
			Rules:           []gatewayv1.HTTPRouteRule{rule},
		},
	}, nil
}

// formatGatewayDuration spells d in the largest unit that divides it.
func formatGatewayDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}
