package pod

// SecretKeyRef names one key of a Secret in the workload's namespace: where
// a credential comes from. Every setting that reads a credential takes one
// (EnvFromSecret, and HFToken, APIKey and the like on the workloads), and
// renders it as a secretKeyRef, so the value never appears in the rendered
// objects.
type SecretKeyRef struct {
	// Name is the Secret's name.
	Name string
	// Key is the key within the Secret.
	Key string
}
