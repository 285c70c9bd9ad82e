package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
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

	for _, crd := range crds {
		if err := waitEstablished(ctx, c, crd.Name); err != nil {
			return err
		}
	}
	for _, crd := range crds {
		if err := waitDiscoverable(ctx, disc, crd); err != nil {
			return err
		}
	}
	return nil
}

// waitEstablished waits for the Established condition of the named CRD.
func waitEstablished(ctx context.Context, c client.Client, name string) error {
	var last string
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			last = err.Error()
			return false, nil
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
			if cond.Type == apiextensionsv1.NamesAccepted && cond.Status == apiextensionsv1.ConditionFalse {
				return false, fmt.Errorf("names not accepted: %s", cond.Message)
			}
		}
		last = "no Established condition yet"
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("wait for crd %s to be established (%s): %w", name, last, err)
	}
	return nil
}

// waitDiscoverable waits until every served version of crd lists its
// resource in discovery, which is what clients map kinds with.
func waitDiscoverable(ctx context.Context, disc discovery.DiscoveryInterface, crd *apiextensionsv1.CustomResourceDefinition) error {
	for _, version := range crd.Spec.Versions {
		if !version.Served {
			continue
		}
		groupVersion := crd.Spec.Group + "/" + version.Name
		err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
			list, err := disc.ServerResourcesForGroupVersion(groupVersion)
			if err != nil {
				return false, nil
			}
			for _, r := range list.APIResources {
				if r.Name == crd.Spec.Names.Plural {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("wait for %s in discovery of %s: %w", crd.Spec.Names.Plural, groupVersion, err)
		}
	}
	return nil
}
