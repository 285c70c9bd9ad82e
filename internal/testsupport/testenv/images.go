package testenv

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Images names the images of the test cluster. They are built on this
// machine (no registry can be reached), imported into the node's
// containerd, and tagged with a hash of their content, so pods name them
// with imagePullPolicy IfNotPresent or Never.
type Images struct {
	// Pause is the pod sandbox image.
	Pause string
	// Busybox is busybox-static with its applets linked: sh, sleep, wget,
	// nslookup... Debian's busybox 1.35 wget crashes (SIGSEGV) when given
	// -T; bound it with timeout instead.
	Busybox string
	// Python is a Debian bookworm root filesystem with python3, torch (CPU,
	// torch.distributed with gloo), Open MPI with mpi4py, numpy and the
	// Jupyter server, plus busybox.
	Python string
	// Standin is an OpenAI-compatible engine written for these tests
	// (internal/testsupport/testenv/cmd/standin-engine) that stands in for vLLM: it
	// serves /v1/models, /v1/chat/completions, /v1/completions,
	// /v1/embeddings, /metrics with vLLM's metric names, and /health.
	Standin string
	// Argoexec is Argo's executor, for the workflow-controller's
	// --executor-image.
	Argoexec string
	// PyTorchInit is the training-operator's PyTorch init container image
	// (--pytorch-init-container-image): busybox with an nslookup that exits
	// 0 once the name resolves, as alpine:3.10's, the operator's default,
	// does (see internal/testsupport/testenv/cmd/nslookup).
	PyTorchInit string
	// KubectlDelivery does what mpioperator/kubectl-delivery does for the
	// training-operator's MPIJob launcher: it copies kubectl into the
	// launcher and waits for the workers to run.
	KubectlDelivery string
	// LabelBackend is cube's ML backend for Label Studio
	// (label/labeltest/cmd/mlbackend): label.BackendFromEnv served on
	// label.BackendPort, the program an MLBackend workload runs.
	LabelBackend string
	// KatibSuggestion is Katib v0.19.0's goptuna suggestion service
	// (cmd/suggestion/goptuna/v1beta1): random, tpe, cmaes, sobol.
	KatibSuggestion string
	// KatibMetricsCollector is Katib v0.19.0's file metrics collector
	// (cmd/metricscollector/v1beta1/file-metricscollector), the sidecar of
	// StdOut and File collectors.
	KatibMetricsCollector string
}

// pythonPackages are the Debian packages of the Python image.
var pythonPackages = []string{
	"python3", "python3-torch", "python3-numpy", "python3-mpi4py", "openmpi-bin",
	// jupyter-core and jupyter-server install the jupyter command and its
	// server subcommand (the python3- packages install only the modules).
	"python3-jupyter-server", "jupyter-core", "jupyter-server", "python3-ipykernel", "busybox", "procps",
}

const (
	debianSuite  = "bookworm"
	debianMirror = "http://deb.debian.org/debian"
)

// imageRecipe is one image: its layers and its configuration.
type imageRecipe struct {
	name       string // repository under cube.test/
	field      *string
	layers     func(ctx context.Context, dir string) ([]string, error) // layer tars, bottom first
	entrypoint []string
	env        []string
	// tag, when set, is the image's tag instead of its content hash, and
	// the image is kept outside the images directory: an image that
	// depends on nothing of this module (the Debian one) is built once per
	// machine, not again whenever a Go program of the other images changes.
	tag string
}

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func (c *clusterLayout) recipes(images *Images) []imageRecipe {
	static := c.binary
	busyboxWith := func(extra, links map[string]string) func(context.Context, string) ([]string, error) {
		return func(_ context.Context, dir string) ([]string, error) {
			layer := filepath.Join(dir, "layer.tar")
			return []string{layer}, writeBusyboxLayer(layer, extra, links)
		}
	}
	standin := "/usr/local/bin/standin-engine"
	return []imageRecipe{
		{name: "pause", field: &images.Pause, layers: busyboxWith(map[string]string{"/pause": static("pause")}, nil), entrypoint: []string{"/pause"}},
		{name: "busybox", field: &images.Busybox, layers: busyboxWith(nil, nil), entrypoint: nil},
		{name: "standin-engine", field: &images.Standin, layers: busyboxWith(map[string]string{standin: static("standin-engine")},
			// The names a vLLM-over-Ray pod and a TEI pod call.
			map[string]string{"/usr/local/bin/vllm": standin, "/usr/local/bin/ray": standin, "/usr/local/bin/python3": standin,
				"/usr/local/bin/text-embeddings-router": standin}),
			entrypoint: []string{standin}},
		// The shell is the host's dash with its C library: busybox-static's
		// ash runs its own applets before searching PATH, so its nslookup
		// would shadow the one this image brings.
		{name: "pytorch-init", field: &images.PyTorchInit, layers: busyboxWith(map[string]string{
			"/usr/local/bin/nslookup":         static("nslookup"),
			"/bin/sh":                         "/bin/dash",
			"/lib/x86_64-linux-gnu/libc.so.6": "/lib/x86_64-linux-gnu/libc.so.6",
			"/lib64/ld-linux-x86-64.so.2":     "/lib64/ld-linux-x86-64.so.2",
		}, nil), entrypoint: nil},
		{name: "argoexec", field: &images.Argoexec, layers: busyboxWith(map[string]string{"/bin/argoexec": static("argoexec")}, nil), entrypoint: []string{"/bin/argoexec"}},
		{name: "kubectl-delivery", field: &images.KubectlDelivery, layers: busyboxWith(map[string]string{
			"/bin/kubectl":          static("kubectl"),
			"/bin/kubectl-delivery": static("kubectl-delivery"),
		}, nil), entrypoint: []string{"/bin/kubectl-delivery"}},
		{name: "label-mlbackend", field: &images.LabelBackend, layers: busyboxWith(map[string]string{
			"/usr/local/bin/label-mlbackend": static("label-mlbackend"),
		}, nil), entrypoint: []string{"/usr/local/bin/label-mlbackend"}},
		// Entrypoints as in the upstream Dockerfiles of Katib v0.19.0
		// (cmd/suggestion/goptuna/v1beta1/Dockerfile,
		// cmd/metricscollector/v1beta1/file-metricscollector/Dockerfile):
		// the controller gives both containers arguments only.
		{name: "katib-suggestion-goptuna", field: &images.KatibSuggestion, layers: busyboxWith(map[string]string{
			"/opt/katib/goptuna-suggestion": static("katib-suggestion-goptuna"),
		}, nil), entrypoint: []string{"/opt/katib/goptuna-suggestion"}},
		{name: "katib-file-metricscollector", field: &images.KatibMetricsCollector, layers: busyboxWith(map[string]string{
			"/app/file-metricscollector": static("katib-file-metricscollector"),
		}, nil), entrypoint: []string{"/app/file-metricscollector"}},
		{name: "python", field: &images.Python, layers: c.debianLayer, entrypoint: nil, tag: pythonTag()},
	}
}

// imageIndex is the cache's record of the built images.
func (c *clusterLayout) imageIndex() string { return filepath.Join(c.artifacts.images, "images.json") }

func (c *clusterLayout) missingImages() []string {
	var images Images
	data, err := os.ReadFile(c.imageIndex())
	if err != nil || json.Unmarshal(data, &images) != nil {
		return []string{"images"}
	}
	var out []string
	for _, r := range c.recipes(&images) {
		if *r.field == "" || !exists(c.imageArchive(*r.field)) {
			out = append(out, r.name)
		}
	}
	return out
}

// pythonTag identifies the Python image by what it is made of.
func pythonTag() string {
	h := sha256.Sum256([]byte(strings.Join(append([]string{"1", debianSuite, debianMirror}, pythonPackages...), "\n")))
	return hex.EncodeToString(h[:])[:12]
}

// sharedImages holds the images built once per machine (see
// imageRecipe.tag).
func (c *clusterLayout) sharedImages() string {
	return filepath.Join(filepath.Dir(c.artifacts.dir), "images-shared")
}

// imageArchive is where the OCI archive of ref lives.
func (c *clusterLayout) imageArchive(ref string) string {
	name := strings.NewReplacer("/", "_", ":", "_").Replace(ref) + ".tar"
	for _, r := range c.recipes(&Images{}) {
		if r.tag != "" && strings.HasSuffix(ref, ":"+r.tag) {
			return filepath.Join(c.sharedImages(), name)
		}
	}
	return filepath.Join(c.artifacts.images, name)
}

// readImages returns the names of the built images.
func (c *clusterLayout) readImages() (Images, error) {
	var images Images
	data, err := os.ReadFile(c.imageIndex())
	if err != nil {
		return images, fmt.Errorf("read image index: %w", err)
	}
	if err := json.Unmarshal(data, &images); err != nil {
		return images, fmt.Errorf("read image index: %w", err)
	}
	return images, nil
}

// buildImages builds every image the index lacks and writes the index.
func (c *clusterLayout) buildImages(ctx context.Context) error {
	images, _ := c.readImages()
	for _, r := range c.recipes(&images) {
		if err := c.ensureImage(ctx, r); err != nil {
			return err
		}
	}
	data, err := json.MarshalIndent(images, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(c.imageIndex(), data)
}

// buildMachineImages builds the images built once per machine (those with
// a tag), which need none of the cluster's programs, so that they can build
// beside them; buildImages then finds them by their tags.
func (c *clusterLayout) buildMachineImages(ctx context.Context) error {
	var images Images
	for _, r := range c.recipes(&images) {
		if r.tag == "" {
			continue
		}
		if err := c.ensureImage(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// ensureImage sets the recipe's field to its image, which it builds unless
// the cache has it.
func (c *clusterLayout) ensureImage(ctx context.Context, r imageRecipe) error {
	if r.tag != "" {
		// Built once per machine: found by its tag.
		*r.field = "cube.test/" + r.name + ":" + r.tag
	}
	if *r.field != "" && exists(c.imageArchive(*r.field)) {
		return nil
	}
	if err := os.MkdirAll(c.sharedImages(), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(c.artifacts.images, ".build-")
	if err != nil {
		return fmt.Errorf("build image %s: %w", r.name, err)
	}
	defer os.RemoveAll(tmp)
	var ref string
	err = timed("image "+r.name, func() (err error) {
		ref, err = c.buildImage(ctx, tmp, r)
		return err
	})
	if err != nil {
		return fmt.Errorf("build image %s: %w", r.name, err)
	}
	*r.field = ref
	return nil
}

// buildImage writes the OCI image layout archive of one recipe and returns
// its reference, cube.test/<name>:<content hash>.
func (c *clusterLayout) buildImage(ctx context.Context, dir string, r imageRecipe) (string, error) {
	layers, err := r.layers(ctx, dir)
	if err != nil {
		return "", err
	}
	var (
		descriptors []ocispec.Descriptor
		diffIDs     []digest.Digest
	)
	for _, layer := range layers {
		d, size, err := fileDigest(layer)
		if err != nil {
			return "", err
		}
		descriptors = append(descriptors, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: d, Size: size})
		diffIDs = append(diffIDs, d) // uncompressed: the digest is the diff ID
	}
	config := ocispec.Image{
		Platform: ocispec.Platform{Architecture: "amd64", OS: "linux"},
		Config: ocispec.ImageConfig{
			Env:        append([]string{defaultPath}, r.env...),
			Entrypoint: r.entrypoint,
			WorkingDir: "/",
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: diffIDs},
	}
	if r.entrypoint == nil {
		config.Config.Cmd = []string{"/bin/sh"}
	}
	configJSON, err := json.Marshal(config)
	if err != nil {
		return "", err
	}
	manifest := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(configJSON), Size: int64(len(configJSON))},
		Layers:    descriptors,
	}
	manifestJSON, err := json.Marshal(manifest)
	if err != nil {
		return "", err
	}
	manifestDigest := digest.FromBytes(manifestJSON)
	ref := fmt.Sprintf("cube.test/%s:%s", r.name, manifestDigest.Encoded()[:12])
	if r.tag != "" {
		ref = fmt.Sprintf("cube.test/%s:%s", r.name, r.tag)
	}
	index := ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{{
			MediaType: ocispec.MediaTypeImageManifest,
			Digest:    manifestDigest,
			Size:      int64(len(manifestJSON)),
			Platform:  &ocispec.Platform{Architecture: "amd64", OS: "linux"},
			// containerd's importer names the image from these.
			Annotations: map[string]string{
				ocispec.AnnotationRefName:  ref,
				"io.containerd.image.name": ref,
			},
		}},
	}
	indexJSON, err := json.Marshal(index)
	if err != nil {
		return "", err
	}
	layout, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return "", err
	}

	dst := c.imageArchive(ref)
	tmp := dst + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	bw := bufio.NewWriterSize(f, 1<<20)
	tw := tar.NewWriter(bw)
	add := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	blob := func(d digest.Digest) string { return "blobs/sha256/" + d.Encoded() }
	err = add(ocispec.ImageLayoutFile, layout)
	if err == nil {
		err = add("index.json", indexJSON)
	}
	if err == nil {
		err = add(blob(manifestDigest), manifestJSON)
	}
	if err == nil {
		err = add(blob(manifest.Config.Digest), configJSON)
	}
	for i := 0; err == nil && i < len(layers); i++ {
		err = addFile(tw, blob(descriptors[i].Digest), layers[i])
	}
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	return ref, os.Rename(tmp, dst)
}

// addFile writes the file at path into tw as name.
func addFile(tw *tar.Writer, name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: info.Size(), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

func fileDigest(path string) (digest.Digest, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(h.Sum(nil))), n, nil
}

// busyboxPath is busybox-static's binary (Debian package busybox-static).
const busyboxPath = "/bin/busybox"

// writeBusyboxLayer writes a layer with busybox-static, a link for each of
// its applets, the directories a container expects, and extra files
// (destination path → source file, mode 0755) and symbolic links
// (path → target).
func writeBusyboxLayer(dst string, extra, links map[string]string) error {
	out, err := exec.Command(busyboxPath, "--list-full").Output()
	if err != nil {
		return fmt.Errorf("list busybox applets (is busybox-static installed?): %w", err)
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	tw := tar.NewWriter(bw)
	epoch := time.Unix(0, 0)
	dirs := []string{"bin", "sbin", "usr", "usr/bin", "usr/sbin", "usr/local", "usr/local/bin", "etc", "tmp", "var", "var/run", "proc", "sys", "dev", "root", "home"}
	for _, d := range dirs {
		mode := int64(0o755)
		if d == "tmp" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Name: d + "/", Mode: mode, ModTime: epoch, Typeflag: tar.TypeDir}); err != nil {
			return err
		}
	}
	files := map[string][]byte{
		"etc/passwd":   []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n"),
		"etc/group":    []byte("root:x:0:\nnobody:x:65534:\n"),
		"etc/hostname": []byte("container\n"),
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		data := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := addExecutable(tw, "bin/busybox", busyboxPath); err != nil {
		return err
	}
	seen := map[string]bool{"bin/busybox": true}
	// Files and links the image brings replace applets of the same name.
	for name := range extra {
		seen[strings.TrimPrefix(name, "/")] = true
	}
	for name := range links {
		seen[strings.TrimPrefix(name, "/")] = true
	}
	for _, name := range slices.Sorted(maps.Keys(extra)) {
		var parents []string
		for dir := filepath.Dir(strings.TrimPrefix(name, "/")); dir != "."; dir = filepath.Dir(dir) {
			parents = append(parents, dir)
		}
		slices.Reverse(parents)
		for _, dir := range parents {
			if slices.Contains(dirs, dir) || seen[dir+"/"] {
				continue
			}
			seen[dir+"/"] = true
			if err := tw.WriteHeader(&tar.Header{Name: dir + "/", Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir}); err != nil {
				return err
			}
		}
	}
	for _, applet := range strings.Fields(string(out)) {
		applet = strings.TrimPrefix(applet, "/")
		if seen[applet] || !slices.Contains(dirs, filepath.Dir(applet)) {
			continue
		}
		seen[applet] = true
		if err := tw.WriteHeader(&tar.Header{Name: applet, Linkname: "/bin/busybox", Mode: 0o777, ModTime: epoch, Typeflag: tar.TypeSymlink}); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(extra)) {
		if err := addExecutable(tw, strings.TrimPrefix(name, "/"), extra[name]); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(links)) {
		if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(name, "/"), Linkname: links[name], Mode: 0o777, ModTime: epoch, Typeflag: tar.TypeSymlink}); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

func addExecutable(tw *tar.Writer, name, src string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err = tw.Write(data)
	return err
}

// debianLayer builds the Python image's root filesystem with mmdebstrap
// (Debian package mmdebstrap) from the Debian mirror the machine reaches;
// documentation, manuals and locales are left out.
func (c *clusterLayout) debianLayer(ctx context.Context, dir string) ([]string, error) {
	layer := filepath.Join(dir, "rootfs.tar")
	args := []string{
		"--variant=essential", "--mode=root",
		"--include=" + strings.Join(pythonPackages, ","),
		"--dpkgopt=path-exclude=/usr/share/doc/*",
		"--dpkgopt=path-exclude=/usr/share/man/*",
		"--dpkgopt=path-exclude=/usr/share/locale/*",
		// A few busybox applets the Debian packages do not bring: DNS
		// lookups and HTTP from inside a pod.
		`--customize-hook=for a in nslookup wget nc; do ln -s /bin/busybox "$1/usr/local/bin/$a"; done`,
		debianSuite, layer, debianMirror,
	}
	cmd := exec.CommandContext(ctx, "mmdebstrap", args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("mmdebstrap: %w\n%s", err, lastLines(stderr.String(), 30))
	}
	return []string{layer}, nil
}

// writeFileAtomic writes data to path through a temporary file.
func writeFileAtomic(path string, data []byte) error {
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
