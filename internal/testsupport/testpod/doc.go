// Package testpod makes the plain pods the tests of cube apply to a real
// API server when what they check is the platform around a pod — a
// tenant's quota, its Pod Security level, the client's apply and wait —
// rather than a builder's rendering.
//
//	w := testpod.Pod("too-big", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")})
//	_, err := c.Apply(ctx, w)
package testpod
