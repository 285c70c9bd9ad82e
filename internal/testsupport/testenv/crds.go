package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// crdInstallTimeout bounds creating the CRDs and waiting for them to be
// served.
const crdInstallTimeout = 3 * time.Minute

// loadCRDs reads every CRD under dir (one subdirectory per source), in a
// stable order. Documents of other kinds are skipped.
func loadCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	sources, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read crds: %w", err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, source := range sources {
		if !source.IsDir() {
			continue
		}
		files, err := filepath.Glob(filepath.Join(dir, source.Name(), "*.y*ml"))
		if err != nil {
			return nil, fmt.Errorf("read crds: %w", err)
		}
		slices.Sort(files)
		found := 0
		for _, file := range files {
			fileCRDs, err := readCRDFile(file)
			if err != nil {
				return nil, err
			}
			found += len(fileCRDs)
			crds = append(crds, fileCRDs...)
		}
		if found == 0 {
			return nil, fmt.Errorf("read crds: no CustomResourceDefinition in %s", filepath.Join(dir, source.Name()))
		}
	}
	return crds, nil
}

// readCRDFile decodes the CustomResourceDefinitions of a multi-document
// YAML file.
func readCRDFile(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read crds: %w", err)
	}
	defer f.Close()
	return decodeCRDs(f, path)
}

// decodeCRDs decodes the CustomResourceDefinitions of a multi-document YAML
// or JSON stream; name only labels errors.
func decodeCRDs(r io.Reader, name string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	decoder := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var crds []*apiextensionsv1.CustomResourceDefinition
	for index := 0; ; index++ {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := decoder.Decode(crd); err != nil {
			if errors.Is(err, io.EOF) {
				return crds, nil
			}
			return nil, fmt.Errorf("decode %s document %d: %w", name, index, err)
		}
		if crd.APIVersion != apiextensionsv1.SchemeGroupVersion.String() || crd.Kind != "CustomResourceDefinition" {
			continue // an empty document or another kind of object
		}
		crds = append(crds, crd)
	}
}

// servedCRD is what a test environment checks of an installed CRD: that
// each served version of its resource is in discovery.
type servedCRD struct {
	Name       string   `json:"name"`
	Group      string   `json:"group"`
	Kind       string   `json:"kind"`
	Plural     string   `json:"plural"`
	Namespaced bool     `json:"namespaced"`
	Versions   []string `json:"versions"`
}

// indexCRDs summarizes crds for the index file.
func indexCRDs(crds []*apiextensionsv1.CustomResourceDefinition) []servedCRD {
	index := make([]servedCRD, 0, len(crds))
	for _, crd := range crds {
		entry := servedCRD{
			Name:       crd.Name,
			Group:      crd.Spec.Group,
			Kind:       crd.Spec.Names.Kind,
			Plural:     crd.Spec.Names.Plural,
			Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		}
		for _, v := range crd.Spec.Versions {
			if v.Served {
				entry.Versions = append(entry.Versions, v.Name)
			}
		}
		index = append(index, entry)
	}
	return index
}

// writeIndex writes the index of crds to path.
func writeIndex(path string, crds []*apiextensionsv1.CustomResourceDefinition) error {
	data, err := json.MarshalIndent(indexCRDs(crds), "", "  ")
	if err != nil {
		return fmt.Errorf("write crd index: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write crd index: %w", err)
	}
	return nil
}

// readIndex reads an index written by writeIndex.
func readIndex(path string) ([]servedCRD, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read crd index: %w", err)
	}
	var index []servedCRD
	if err := json.Unmarshal(data, &index); err != nil {
		return nil, fmt.Errorf("read crd index %s: %w", path, err)
	}
	if len(index) == 0 {
		return nil, fmt.Errorf("read crd index %s: empty", path)
	}
	return index, nil
}

// newCRDClient returns a client that knows CustomResourceDefinitions.
func newCRDClient(config *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("create crd client: %w", err)
	}
	c, err := client.New(config, client.Options{Scheme: scheme, Log: stderrLogger()})
	if err != nil {
		return nil, fmt.Errorf("create crd client: %w", err)
	}
	return c, nil
}

// installCRDs creates the CRDs and waits until each is Established and its
// resources are in discovery. They are created, not applied client-side:
// Argo's full CRDs are far larger than the 256 KiB a last-applied
// annotation may hold.
func installCRDs(ctx context.Context, c client.Client, disc discovery.DiscoveryInterface, crds []*apiextensionsv1.CustomResourceDefinition) error {
	ctx, cancel := context.WithTimeout(ctx, crdInstallTimeout)
	defer cancel()

	const parallel = 4
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, parallel)
	)
	for _, crd := range crds {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := c.Create(ctx, crd.DeepCopy()); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("create crd %s: %w", crd.Name, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Discovery first: it is cheap to poll, and the API server publishes a
	// CRD there only once it is Established. Polling the CRDs themselves
	// would make the server encode megabytes of schema many times over.
	if err := waitServed(ctx, disc, indexCRDs(crds)); err != nil {
		return err
	}
	return checkEstablished(ctx, c, crds)
}

// checkEstablished confirms, with one list, that every CRD is Established.
func checkEstablished(ctx context.Context, c client.Client, crds []*apiextensionsv1.CustomResourceDefinition) error {
	list := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(ctx, list); err != nil {
		return fmt.Errorf("list crds: %w", err)
	}
	established := map[string]bool{}
	for _, crd := range list.Items {
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				established[crd.Name] = true
			}
		}
	}
	var missing []string
	for _, crd := range crds {
		if !established[crd.Name] {
			missing = append(missing, crd.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("crds not established: %s", strings.Join(missing, ", "))
	}
	return nil
}

// waitServed waits until every served version of every CRD in index lists
// its resource in discovery, which is what clients map kinds with.
func waitServed(ctx context.Context, disc discovery.DiscoveryInterface, index []servedCRD) error {
	var missing []string
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		// A partial answer (some group failed) still lists the rest.
		_, lists, _ := disc.ServerGroupsAndResources()
		served := map[string]bool{}
		for _, list := range lists {
			for _, r := range list.APIResources {
				served[list.GroupVersion+"/"+r.Name] = true
			}
		}
		missing = missing[:0]
		for _, crd := range index {
			for _, version := range crd.Versions {
				if key := crd.Group + "/" + version + "/" + crd.Plural; !served[key] {
					missing = append(missing, key)
				}
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("wait for crds in discovery (missing %s): %w", strings.Join(missing, ", "), err)
	}
	return nil
}
