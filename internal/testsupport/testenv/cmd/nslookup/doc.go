// Command nslookup resolves a name through the pod's resolv.conf (its
// search domains and ndots) and exits 0 when it resolves, 1 when it does
// not. It stands in for the nslookup of alpine:3.10, the training-operator
// v1.8.1's default PyTorch init container image (its init container runs
// "until nslookup MASTER; do sleep 2; done"): Debian's busybox 1.35
// nslookup queries every search domain and exits 1 when any of them fails,
// even after the name resolved, so that loop never ends with it.
//
//	nslookup NAME
package main
