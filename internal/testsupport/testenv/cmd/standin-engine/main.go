package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cubestudio/cube/serve/servetest"
)

func main() {
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	switch {
	case name == "standin-engine" && len(args) > 0 && strings.HasPrefix(args[0], "--"):
		// The image's entrypoint given flags only: TEI's images run the
		// router from their entrypoint with the container's arguments,
		// and serve renders no command for TEI.
		name = "text-embeddings-router"
	case name == "standin-engine" && len(args) > 0:
		name, args = args[0], args[1:]
	}
	var err error
	switch name {
	case "vllm", "serve":
		if len(args) > 0 && args[0] == "serve" {
			args = args[1:]
		}
		err = serveAPI(args, "VLLM_API_KEY")
	case "text-embeddings-router":
		err = serveAPI(teiArgs(args), "API_KEY")
	case "ray":
		err = ray(args)
	case "ray-head":
		err = rayHead(args)
	case "python3", "python":
		err = python(args)
	default:
		err = fmt.Errorf("unknown command %q", name)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "standin-engine %s: %v\n", name, err)
		os.Exit(1)
	}
}

// teiArgs turns Text Embeddings Inference's flags (--model-id, --hostname,
// --port, --served-model-name, --api-key) into the ones serveAPI reads.
func teiArgs(args []string) []string {
	var out []string
	if v, ok := flagValue(args, "model-id"); ok {
		out = append(out, "--model", v)
	}
	if v, ok := flagValue(args, "hostname"); ok {
		out = append(out, "--host", v)
	}
	for _, name := range []string{"port", "served-model-name", "api-key"} {
		if v, ok := flagValue(args, name); ok {
			out = append(out, "--"+name, v)
		}
	}
	return out
}

// flagValue finds --name=value or --name value in args.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--"+name || strings.HasPrefix(a, "--"+name+"=") {
			return true
		}
	}
	return false
}

// serveAPI serves servetest's API for the model the arguments name. The
// API key comes from --api-key or the environment variable keyEnv, where
// the engine reads it (serve renders VLLM_API_KEY for vLLM, API_KEY for
// TEI); probes and scrapes need none.
func serveAPI(args []string, keyEnv string) error {
	model := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		model = args[0]
	}
	if v, ok := flagValue(args, "model"); ok {
		model = v
	}
	if v, ok := flagValue(args, "served-model-name"); ok {
		model = v
	}
	if model == "" {
		return fmt.Errorf("no model given")
	}
	port := "8000"
	if v, ok := flagValue(args, "port"); ok {
		port = v
	}
	host, _ := flagValue(args, "host")
	opts := []servetest.Option{
		servetest.Answer(func(prompt string) string { return "standin: " + prompt }),
		servetest.OwnedBy("standin-engine"),
	}
	key := os.Getenv(keyEnv)
	if v, ok := flagValue(args, "api-key"); ok {
		key = v
	}
	opts = append(opts, servetest.APIKey(key))
	addr := net.JoinHostPort(host, port)
	fmt.Printf("standin-engine: serving %s on %s (standing in for vLLM)\n", model, addr)
	return http.ListenAndServe(addr, servetest.NewHandler(model, opts...))
}

// ray handles "ray start".
func ray(args []string) error {
	if len(args) == 0 || args[0] != "start" {
		return fmt.Errorf("only `ray start` is stood in for")
	}
	args = args[1:]
	if hasFlag(args, "head") {
		port := "6379"
		if v, ok := flagValue(args, "port"); ok {
			port = v
		}
		// Start the head in the background and return, as ray start does.
		self, err := os.Executable()
		if err != nil {
			return err
		}
		cmd := exec.Command(self, "ray-head", port)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return err
		}
		for range 50 {
			if c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", port)); err == nil {
				c.Close()
				fmt.Println("ray head started on port", port)
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return fmt.Errorf("head did not start on port %s", port)
	}
	address, ok := flagValue(args, "address")
	if !ok {
		return fmt.Errorf("ray start needs --head or --address")
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("--address: %w", err)
	}
	var addrs []string
	for attempt := 1; ; attempt++ {
		addrs, err = net.LookupHost(host)
		if err == nil {
			break
		}
		fmt.Printf("waiting for %s to resolve (attempt %d): %v\n", host, attempt, err)
		time.Sleep(time.Second)
	}
	fmt.Printf("resolved %s to %s\n", host, strings.Join(addrs, ","))
	var conn net.Conn
	for attempt := 1; ; attempt++ {
		conn, err = net.Dial("tcp", net.JoinHostPort(host, port))
		if err == nil {
			break
		}
		fmt.Printf("waiting for the head at %s (attempt %d): %v\n", address, attempt, err)
		time.Sleep(time.Second)
	}
	hostname, _ := os.Hostname()
	fmt.Fprintf(conn, "JOIN %s\n", hostname)
	fmt.Printf("joined the head at %s\n", address)
	if !hasFlag(args, "block") {
		return nil
	}
	// Block while the head lives.
	_, _ = bufio.NewReader(conn).ReadString('\n')
	return fmt.Errorf("lost the head at %s", address)
}

// rayHead counts the nodes connected to it: itself plus every open JOIN
// connection. A COUNT request gets the number.
func rayHead(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: ray-head PORT")
	}
	ln, err := net.Listen("tcp", ":"+args[0])
	if err != nil {
		return err
	}
	var (
		mu    sync.Mutex
		nodes = 1
	)
	for {
		conn, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer conn.Close()
			line, err := bufio.NewReader(conn).ReadString('\n')
			if err != nil {
				return
			}
			switch {
			case strings.HasPrefix(line, "JOIN "):
				mu.Lock()
				nodes++
				mu.Unlock()
				fmt.Printf("ray head: %s joined\n", strings.TrimSpace(strings.TrimPrefix(line, "JOIN ")))
				// Hold the connection: the node is alive while it is open.
				buf := make([]byte, 1)
				_, _ = conn.Read(buf)
				mu.Lock()
				nodes--
				mu.Unlock()
			case strings.HasPrefix(line, "COUNT"):
				mu.Lock()
				n := nodes
				mu.Unlock()
				fmt.Fprintln(conn, n)
			}
		}()
	}
}

// python stands in for the one Python snippet the vLLM leader runs: it
// counts the Ray nodes.
func python(args []string) error {
	if len(args) != 2 || args[0] != "-c" || !strings.Contains(args[1], "ray.nodes()") {
		return fmt.Errorf("the stand-in only answers the Ray node count script, not %q", args)
	}
	conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(6379))
	if err != nil {
		return err
	}
	defer conn.Close()
	fmt.Fprintln(conn, "COUNT")
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	fmt.Print(line)
	return nil
}
