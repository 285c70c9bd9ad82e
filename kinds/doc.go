// Package kinds gathers the kinds every package of cube builds, for a
// cube.Client that follows any release cube can make:
//
//	c, err := cube.New(cfg, cube.Kinds(kinds.All()...))
//
// A Client reads the phase of the Kubernetes API's own kinds (Deployment,
// Job, StatefulSet, Service…) by itself; any other kind it has not been
// given reads Unknown, never Ready. A program that builds only training
// jobs can give just those (cube.Kinds(train.Kinds()...)) and stay
// lighter: this package imports train, serve, pipeline and tune.
package kinds
