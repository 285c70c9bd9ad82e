package podspec

import corev1 "k8s.io/api/core/v1"

// HelperSecurityContext returns the security context for a container a
// builder adds beside main (an init container that downloads the model, a
// sidecar): main's, as the caller set it with SecurityContext, without
// the capabilities main adds (IPC_LOCK for an RDMA fabric, which only the
// engine needs). A pod the caller made meet the restricted Pod Security
// level then still does with its helpers. It is nil when main has none,
// or only capabilities to add.
func HelperSecurityContext(main *corev1.Container) *corev1.SecurityContext {
	if main == nil || main.SecurityContext == nil {
		return nil
	}
	sc := main.SecurityContext.DeepCopy()
	if sc.Capabilities != nil {
		sc.Capabilities.Add = nil
		if len(sc.Capabilities.Drop) == 0 {
			sc.Capabilities = nil
		}
	}
	if *sc == (corev1.SecurityContext{}) {
		return nil // main had only capabilities to add
	}
	return sc
}
