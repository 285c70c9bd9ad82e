package envtest_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// adopterTest is the test of a module that requires cube: it starts the
// API server through envtest and applies a served model.
const adopterTest = `package portal

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/cubetest/envtest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/serve"
)

func TestMain(m *testing.M) { envtest.Main(m) }

func TestPortalServes(t *testing.T) {
	env := envtest.Get(t)
	ns := env.Namespace(t)
	svc := serve.VLLM("chat", "Qwen/Qwen2.5-7B-Instruct").Namespace(ns).On(hardware.H100).Accelerators(1)
	if _, err := env.Client.Apply(t.Context(), svc); err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := env.Kube.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "chat"}, &d); err != nil {
		t.Fatal(err)
	}
	t.Logf("adopter: stored deployment %s/%s", d.Namespace, d.Name)
}
`

// TestAdopterModule runs envtest from a module of its own that requires
// cube, as an adopter's does. cube is given to it the way the module cache
// holds it: a read-only copy without the nested modules (a module zip
// leaves out every directory with a go.mod of its own, such as testenv's
// tools module) and without a go.work. It reuses the user cache, so it
// proves that the build finds what it needs without cube's source tree,
// not the cold build itself.
func TestAdopterModule(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(goCmd, "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	tmp := t.TempDir()
	cube := filepath.Join(tmp, "cube")
	copyAsModuleZip(t, root, cube)
	t.Cleanup(func() { makeWritable(cube) })

	portal := filepath.Join(tmp, "portal")
	if err := os.MkdirAll(portal, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod := "module example.com/portal\n\ngo 1.26.0\n\nrequire github.com/cubestudio/cube v0.0.0\n\nreplace github.com/cubestudio/cube => " + cube + "\n"
	write(t, filepath.Join(portal, "go.mod"), gomod)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(portal, "go.sum"), string(sum))
	write(t, filepath.Join(portal, "portal_test.go"), adopterTest)

	// -mod=mod fills in the requirements go test needs (cube's own go.sum
	// has their sums); GOPROXY=off keeps it to the module cache. go mod
	// tidy would also want the modules of other platforms' build tags.
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
	run := func(timeout time.Duration, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), goCmd, args...)
		cmd.Dir = portal
		cmd.Env = env
		cmd.WaitDelay = timeout
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s in the adopter module: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	got := run(10*time.Minute, "test", "-count=1", "-v", "-run", "TestPortalServes", ".")
	if !strings.Contains(got, "adopter: stored deployment") || !strings.Contains(got, "--- PASS: TestPortalServes") {
		t.Errorf("the adopter's test did not pass:\n%s", got)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if written, _ := filepath.Glob(filepath.Join(cache, "cube-testenv", "tools-*", "go.mod")); len(written) == 0 {
		t.Error("the build did not write the tools module out of its snapshot")
	}
}

// copyAsModuleZip copies the module at src to dst as a module zip holds
// it: no .git, no directory with a go.mod of its own; read-only, as the
// module cache is.
func copyAsModuleZip(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			if rel != "." {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o444)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dst, "internal", "testsupport", "testenv", "tools")); err == nil {
		t.Fatal("the copy has the nested tools module, which a module zip leaves out")
	}
	_ = filepath.WalkDir(dst, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(path, 0o555) // still readable, so the walk goes on
		}
		return nil
	})
}

func makeWritable(dir string) {
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(path, 0o755)
		}
		return nil
	})
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
