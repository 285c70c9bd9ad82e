package cube

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/retry"
)

// Client applies workloads to a cluster and follows the releases it made. It
// talks through a controller-runtime client and sends unstructured objects, so
// it needs no scheme for third-party kinds: any CRD installed in the cluster
// works. A Client is safe for concurrent use.
type Client struct {
	// err is a problem with how the client was made (no client, a bad
	// option): every method returns it.
	err         error
	c           client.Client
	clientset   kubernetes.Interface
	namespace   string
	kinds       []Kind    // as given to Kinds
	table       kindTable // CoreKinds and kinds, built once by NewFromClient
	owner       string    // the field owner, see FieldOwner
	parallelism int
	retry       retry.Policy
	watches     watchHub // shared by the client's waits
}

// New returns a Client for the cluster cfg points at. Its controller-runtime
// client supports watches, which Release.Wait uses.
func New(cfg *rest.Config, opts ...Option) (*Client, error) {
	if cfg == nil {
		return nil, errors.New("cube: rest config is nil")
	}
	probe := &Client{}
	for _, o := range opts {
		if !isNil(o) {
			o.applyToClient(probe)
		}
	}
	if probe.err != nil {
		return nil, probe.err // a bad option, before any connection is made
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("build scheme: %w", err)
	}
	cfg = recordWarnings(cfg)
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create clientset: %w", err)
	}
	cl := NewFromClient(c, append([]Option{Clientset(cs)}, opts...)...)
	if cl.err != nil {
		return nil, cl.err
	}
	return cl, nil
}

// NewFromClient returns a Client on an existing controller-runtime client, for
// programs that already run a manager. Release.Wait needs c to implement
// client.WithWatch (the clients of client.NewWithWatch and of
// controller-runtime's fake package do; a manager's cached client does not:
// build one with client.NewWithWatch(mgr.GetConfig(), …) for waiting). A
// nil c, or a bad option, makes every method of the client return that
// problem.
func NewFromClient(c client.Client, opts ...Option) *Client {
	cl := &Client{c: c, namespace: metav1.NamespaceDefault, owner: DefaultFieldOwner, parallelism: DefaultApplyParallelism, retry: defaultRetry}
	if isNil(c) {
		cl.err = errors.New("cube: controller-runtime client is nil")
	}
	for _, o := range opts {
		if !isNil(o) {
			o.applyToClient(cl)
		}
	}
	cl.table = newKindTable(cl.kinds...)
	return cl
}

// usable reports why c cannot talk to a cluster: a nil or zero Client, or
// one made with a nil client or a bad option.
func (c *Client) usable() error {
	switch {
	case c == nil:
		return errors.New("cube: client is nil: make one with cube.New or cube.NewFromClient")
	case c.err != nil:
		return c.err
	case c.c == nil:
		return errors.New("cube: client has no controller-runtime client: make one with cube.New or cube.NewFromClient")
	}
	return nil
}

// Namespace returns the namespace the client puts the objects of a
// workload that names none in (cube.Namespace; "default" without it).
func (c *Client) Namespace() string {
	if c == nil {
		return ""
	}
	return c.namespace
}
