package security_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// goldenObject is one object of a golden file.
type goldenObject struct {
	file string // relative to the module root
	obj  *unstructured.Unstructured
}

// goldenObjects reads every golden file of the module (testdata/*.golden
// and *.golden.yaml in every package) and returns the Kubernetes objects
// in them. The hardware package's goldens are bare pod templates (what
// hardware.Apply makes of a template): they come back as PodTemplates.
// Goldens that hold no object (error lists, reports) are skipped.
func goldenObjects(t *testing.T) (objs []goldenObject, files int) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if strings.HasPrefix(name, ".") || name == "fuzz" {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Base(filepath.Dir(path)) != "testdata" || !(strings.HasSuffix(name, ".golden") || strings.HasSuffix(name, ".golden.yaml")) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		found := objectsIn(t, rel, data)
		if len(found) > 0 {
			files++
		}
		objs = append(objs, found...)
		return nil
	})
	require.NoError(t, err)
	return objs, files
}

// objectsIn decodes the YAML documents of data.
func objectsIn(t *testing.T, file string, data []byte) []goldenObject {
	var out []goldenObject
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			return out // not YAML: a text golden
		}
		var m map[string]any
		if yaml.Unmarshal(doc, &m) != nil || m == nil {
			continue
		}
		u := &unstructured.Unstructured{}
		switch {
		case m["kind"] != nil && m["apiVersion"] != nil:
			u.Object = m
		case hasContainers(m):
			u.Object = map[string]any{"apiVersion": "v1", "kind": "PodTemplate",
				"metadata": map[string]any{"name": filepath.Base(file)}, "template": m}
		default:
			continue
		}
		// Normalise numbers as the API machinery does (yaml gives float64).
		js, err := u.MarshalJSON()
		require.NoError(t, err, file)
		n := &unstructured.Unstructured{}
		require.NoError(t, n.UnmarshalJSON(js), file)
		out = append(out, goldenObject{file: file, obj: n})
	}
}

func hasContainers(m map[string]any) bool {
	spec, ok := m["spec"].(map[string]any)
	if !ok {
		return false
	}
	_, ok = spec["containers"].([]any)
	return ok
}
