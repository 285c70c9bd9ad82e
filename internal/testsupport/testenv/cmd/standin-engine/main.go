package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"
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
		err = serveAPI(args)
	case "text-embeddings-router":
		err = serveAPI(teiArgs(args))
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
// --port, --served-model-name) into the ones serveAPI reads.
func teiArgs(args []string) []string {
	var out []string
	if v, ok := flagValue(args, "model-id"); ok {
		out = append(out, "--model", v)
	}
	if v, ok := flagValue(args, "hostname"); ok {
		out = append(out, "--host", v)
	}
	for _, name := range []string{"port", "served-model-name"} {
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

type engine struct {
	model            string
	running, waiting atomic.Int64
	promptTokens     atomic.Int64
	generatedTokens  atomic.Int64
	succeeded        atomic.Int64
}

func serveAPI(args []string) error {
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
	e := &engine{model: model}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /v1/models", e.models)
	mux.HandleFunc("POST /v1/chat/completions", e.chat)
	mux.HandleFunc("POST /v1/completions", e.completions)
	mux.HandleFunc("POST /v1/embeddings", e.embeddings)
	mux.HandleFunc("GET /metrics", e.metrics)
	addr := net.JoinHostPort(host, port)
	fmt.Printf("standin-engine: serving %s on %s (standing in for vLLM)\n", model, addr)
	return http.ListenAndServe(addr, mux)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (e *engine) checkModel(w http.ResponseWriter, model string) bool {
	if model != e.model {
		writeJSON(w, http.StatusNotFound, openai.ErrorResponse{Error: &openai.APIError{
			Type: "NotFoundError", Message: fmt.Sprintf("The model `%s` does not exist.", model), HTTPStatusCode: http.StatusNotFound,
		}})
		return false
	}
	return true
}

func (e *engine) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Object string         `json:"object"`
		Data   []openai.Model `json:"data"`
	}{"list", []openai.Model{{ID: e.model, Object: "model", OwnedBy: "standin-engine", Root: e.model, CreatedAt: time.Now().Unix()}}})
}

func words(s string) int { return len(strings.Fields(s)) }

func (e *engine) chat(w http.ResponseWriter, r *http.Request) {
	var req openai.ChatCompletionRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, openai.ErrorResponse{Error: &openai.APIError{Type: "BadRequestError", Message: err.Error()}})
		return
	}
	if !e.checkModel(w, req.Model) {
		return
	}
	e.running.Add(1)
	defer e.running.Add(-1)
	last := ""
	prompt := 0
	for _, m := range req.Messages {
		prompt += words(m.Content)
		if m.Role == openai.ChatMessageRoleUser {
			last = m.Content
		}
	}
	answer := "standin: " + last
	usage := openai.Usage{PromptTokens: prompt, CompletionTokens: words(answer), TotalTokens: prompt + words(answer)}
	e.promptTokens.Add(int64(usage.PromptTokens))
	e.generatedTokens.Add(int64(usage.CompletionTokens))
	e.succeeded.Add(1)
	id := fmt.Sprintf("chatcmpl-%x", fnv64(answer))
	if !req.Stream {
		writeJSON(w, http.StatusOK, openai.ChatCompletionResponse{
			ID: id, Object: "chat.completion", Created: time.Now().Unix(), Model: e.model,
			Choices: []openai.ChatCompletionChoice{{Index: 0, Message: openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: answer}, FinishReason: openai.FinishReasonStop}},
			Usage:   usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	for i, word := range strings.SplitAfter(answer, " ") {
		chunk := openai.ChatCompletionStreamResponse{ID: id, Object: "chat.completion.chunk", Created: time.Now().Unix(), Model: e.model,
			Choices: []openai.ChatCompletionStreamChoice{{Index: 0, Delta: openai.ChatCompletionStreamChoiceDelta{Content: word}}}}
		if i == 0 {
			chunk.Choices[0].Delta.Role = openai.ChatMessageRoleAssistant
		}
		data, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", data)
		if flusher != nil {
			flusher.Flush()
		}
	}
	final := openai.ChatCompletionStreamResponse{ID: id, Object: "chat.completion.chunk", Created: time.Now().Unix(), Model: e.model,
		Choices: []openai.ChatCompletionStreamChoice{{Index: 0, FinishReason: openai.FinishReasonStop}}}
	data, _ := json.Marshal(final)
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", data)
}

func (e *engine) completions(w http.ResponseWriter, r *http.Request) {
	var req openai.CompletionRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, openai.ErrorResponse{Error: &openai.APIError{Type: "BadRequestError", Message: err.Error()}})
		return
	}
	if !e.checkModel(w, req.Model) {
		return
	}
	prompt, _ := req.Prompt.(string)
	text := " standin: " + prompt
	e.succeeded.Add(1)
	writeJSON(w, http.StatusOK, openai.CompletionResponse{
		ID: fmt.Sprintf("cmpl-%x", fnv64(text)), Object: "text_completion", Created: time.Now().Unix(), Model: e.model,
		Choices: []openai.CompletionChoice{{Text: text, FinishReason: "stop"}},
		Usage:   &openai.Usage{PromptTokens: words(prompt), CompletionTokens: words(text), TotalTokens: words(prompt) + words(text)},
	})
}

// embeddingSize is the length of the stand-in's vectors.
const embeddingSize = 16

func (e *engine) embeddings(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, openai.ErrorResponse{Error: &openai.APIError{Type: "BadRequestError", Message: err.Error()}})
		return
	}
	if !e.checkModel(w, req.Model) {
		return
	}
	var inputs []string
	if err := json.Unmarshal(req.Input, &inputs); err != nil {
		var one string
		if err := json.Unmarshal(req.Input, &one); err != nil {
			writeJSON(w, http.StatusBadRequest, openai.ErrorResponse{Error: &openai.APIError{Type: "BadRequestError", Message: "input must be a string or a list of strings"}})
			return
		}
		inputs = []string{one}
	}
	resp := openai.EmbeddingResponse{Object: "list", Model: openai.EmbeddingModel(e.model)}
	for i, in := range inputs {
		// A hashed bag of words: deterministic, and texts sharing words
		// point the same way.
		v := make([]float32, embeddingSize)
		for _, word := range strings.Fields(strings.ToLower(in)) {
			v[fnv64(word)%embeddingSize]++
		}
		resp.Data = append(resp.Data, openai.Embedding{Object: "embedding", Embedding: v, Index: i})
		resp.Usage.PromptTokens += words(in)
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	writeJSON(w, http.StatusOK, resp)
}

func (e *engine) metrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	label := fmt.Sprintf(`{model_name=%q}`, e.model)
	fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running%s %d\n", label, e.running.Load())
	fmt.Fprintf(w, "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting%s %d\n", label, e.waiting.Load())
	fmt.Fprintf(w, "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc%s 0\n", label)
	fmt.Fprintf(w, "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total%s %d\n", label, e.promptTokens.Load())
	fmt.Fprintf(w, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total%s %d\n", label, e.generatedTokens.Load())
	fmt.Fprintf(w, "# TYPE vllm:request_success_total counter\nvllm:request_success_total{finished_reason=\"stop\",model_name=%q} %d\n", e.model, e.succeeded.Load())
}

func fnv64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
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
