// Package security holds cube's cross-package security tests; it has no
// code of its own, only tests that look at what every builder renders:
//
//   - Pod Security: every pod template of every golden case and of a
//     generated matrix of every builder × hardware profile × fabric is
//     judged by the evaluator of k8s.io/pod-security-admission (the checks
//     the API server's PodSecurity admission runs) at the latest version;
//     the only departures from the restricted level are the ones the root
//     package documents (cube's doc: "Pod Security").
//   - Secrets: every object of those cases is scanned for credentials
//     written in clear: token patterns, --api-key style arguments with a
//     literal, credential-named env vars with a literal value, URLs with
//     user info, credential-looking data in ConfigMaps.
//
// Run them with
//
//	go test ./internal/security
package security
