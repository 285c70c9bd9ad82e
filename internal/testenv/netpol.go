package testenv

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
)

// netpolTable is the nftables table kube-network-policies v0.8.0 keeps its
// rules in (pkg/networkpolicy/controller.go, tableName).
const netpolTable = "kube-network-policies"

// startNetworkPolicies runs kube-network-policies v0.8.0, the Kubernetes
// SIG Network's NetworkPolicy enforcer, on the host: it puts the packets
// to and from pod IPs that leave through the bridge into an nfqueue in the
// postrouting hook (with br_netfilter, bridged pod-to-pod packets pass the
// IPv4 hooks) and accepts or drops each new connection by the cluster's
// NetworkPolicies. It reads its credentials the in-cluster way
// (rest.InClusterConfig in cmd/main.go), so it runs in a mount namespace
// of its own with a service-account directory holding the admin token and
// the CA. NRI is off (no NRI socket on this containerd); pod IPs come from
// the API. As upstream does, it lets through what the node's root user
// sends (kubelet probes, and this host's tests) and established
// connections; packets delivered to the host itself (the API server,
// CoreDNS and webhooks listen on the bridge's gateway) never reach the
// postrouting hook, so a tenant's egress policy cannot cut a pod off from
// them here, as it could on a real cluster.
func (n *node) startNetworkPolicies() error {
	u, err := url.Parse(n.config.Host)
	if err != nil {
		return fmt.Errorf("api server address %q: %w", n.config.Host, err)
	}
	sa := filepath.Join(n.dir, "netpol", "serviceaccount")
	if err := os.MkdirAll(sa, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(sa, "token"), []byte(n.config.BearerToken), 0o600); err != nil {
		return err
	}
	ca, err := os.ReadFile(n.config.CAFile)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(sa, "ca.crt"), ca, 0o600); err != nil {
		return err
	}
	if err := os.MkdirAll("/run/secrets/kubernetes.io", 0o755); err != nil {
		return err
	}
	metrics, err := freePort()
	if err != nil {
		return err
	}
	_, err = n.start("kube-network-policies", "/usr/bin/unshare", []string{
		"--mount", "--propagation", "private", "--",
		"/bin/sh", "-c", `mount --bind "$0" /run/secrets/kubernetes.io && exec "$@"`, filepath.Dir(sa),
		n.cache.binary("kube-network-policies"),
		"--hostname-override=" + nodeName,
		"--disable-nri",
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metrics),
		"--v=2",
	}, []string{"KUBERNETES_SERVICE_HOST=" + u.Hostname(), "KUBERNETES_SERVICE_PORT=" + u.Port()})
	return err
}
