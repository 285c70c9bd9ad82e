// Package yamlenc writes the YAML documents cube.Render prints, byte for
// byte what yaml.v2 writes for the same unstructured content, without the
// allocations of yaml.v2's event queue. It writes the common shapes itself
// and declines the rest (Document and FromJSON return false), which the
// caller then gives to yaml.v2.
package yamlenc
