package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kubectl-delivery:", err)
		os.Exit(1)
	}
}

func run() error {
	target := os.Getenv("TARGET_DIR")
	if target == "" {
		return fmt.Errorf("TARGET_DIR is not set")
	}
	if err := copyExecutable("/bin/kubectl", filepath.Join(target, "kubectl")); err != nil {
		return err
	}
	hosts, err := readHostfile("/etc/mpi/hostfile")
	if err != nil {
		return err
	}
	config, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	namespace := os.Getenv("NAMESPACE")
	ctx := context.Background()
	for _, host := range hosts {
		for {
			pod, err := clientset.CoreV1().Pods(namespace).Get(ctx, host, metav1.GetOptions{})
			if err == nil && pod.Status.Phase == corev1.PodRunning {
				fmt.Println("running:", host)
				break
			}
			time.Sleep(time.Second)
		}
	}
	return nil
}

func readHostfile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var hosts []string
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		if fields := strings.Fields(scanner.Text()); len(fields) > 0 {
			hosts = append(hosts, fields[0])
		}
	}
	return hosts, scanner.Err()
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
