package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// The daemon supervises the components it started, as systemd supervises a
// kubelet and a Deployment its operator: once the cluster is up, a
// component that exits is started again with the same command line, and
// its new process ID is published in pids.json. Tests inject a crash with
// Cluster.Restart, which kills a component and waits for its successor.

func pidsFile() string { return filepath.Join(clusterStateDir, "pids.json") }

// supervise restarts p whenever it exits after the node is up, until the
// node stops.
func (n *node) supervise(name, bin string, args, env []string, p *process) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		for {
			select {
			case <-n.ctx.Done():
				return
			case <-p.exited:
			}
			if !n.up.Load() {
				return // startNode reports a component that dies while starting
			}
			select {
			case <-n.ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			next, err := startProcessEnv(n.servers.launcher, name, bin, args, env, filepath.Join(n.logDir, name+".log"))
			if err != nil {
				fmt.Printf("restart %s: %v\n", name, err)
				return
			}
			fmt.Printf("%s exited (%v): restarted as pid %d\n", name, p.waitErr, next.cmd.Process.Pid)
			n.mu.Lock()
			if i := slices.Index(n.procs, p); i >= 0 {
				n.procs[i] = next
			}
			n.mu.Unlock()
			p = next
			n.publishPIDs()
		}
	}()
}

// publishPIDs writes every component's current process ID.
func (n *node) publishPIDs() {
	n.mu.Lock()
	pids := make(map[string]int, len(n.procs))
	for _, p := range n.procs {
		pids[p.name] = p.cmd.Process.Pid
	}
	n.mu.Unlock()
	data, err := json.Marshal(pids)
	if err == nil {
		err = writeFileAtomic(pidsFile(), data)
	}
	if err != nil {
		fmt.Printf("publish pids: %v\n", err)
	}
}

func readPIDs() (map[string]int, error) {
	data, err := os.ReadFile(pidsFile())
	if err != nil {
		return nil, err
	}
	pids := map[string]int{}
	return pids, json.Unmarshal(data, &pids)
}

// Restart crashes one of the cluster's components (kubelet, containerd,
// kube-scheduler, kube-controller-manager, kube-proxy, coredns,
// training-operator, lws-controller, workflow-controller,
// kuberay-operator, katib-controller, ...) with SIGKILL of its process
// group, as a node or operator failure would, and returns once the daemon
// has started it again. Readiness after that is the component's own: the
// caller waits for what it needs.
func (c *Cluster) Restart(ctx context.Context, component string) error {
	pids, err := readPIDs()
	if err != nil {
		return fmt.Errorf("restart %s: read the cluster's components: %w", component, err)
	}
	old, ok := pids[component]
	if !ok {
		names := make([]string, 0, len(pids))
		for name := range pids {
			names = append(names, name)
		}
		slices.Sort(names)
		return fmt.Errorf("restart %s: no such component; the cluster runs %v", component, names)
	}
	if err := syscall.Kill(-old, syscall.SIGKILL); err != nil {
		return fmt.Errorf("restart %s: kill process group %d: %w", component, old, err)
	}
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		if pids, err := readPIDs(); err == nil && pids[component] != old && processAlive(pids[component]) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("restart %s: the daemon did not start it again: %w (see %s)", component, ctx.Err(), daemonLog())
		case <-ticker.C:
		}
	}
}
