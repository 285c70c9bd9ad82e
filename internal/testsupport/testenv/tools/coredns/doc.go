// Command coredns is CoreDNS v1.12.1 for the test cluster, with only the
// plugins the node's Corefile uses (see startCoreDNS in node.go): the body
// of CoreDNS's coredns.go with core/plugin (which plugs in all seventy
// plugins of its plugin.cfg, the clouds' SDKs among them) replaced by the
// six it needs. On a cold machine that halves what the cluster compiles for
// DNS. A plugin that is not imported is not registered, so a Corefile that
// names it fails to load with caddy's "Unknown directive" instead of
// misbehaving; dnsserver.Directives still fixes the order of those that
// are (coredns/core/dnsserver/zdirectives.go, register.go).
package main
