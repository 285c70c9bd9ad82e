package milvus

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Environment variables ConfigFromEnv reads and Env sets.
const (
	EnvAddress    = "MILVUS_ADDRESS"
	EnvToken      = "MILVUS_TOKEN"
	EnvCollection = "MILVUS_COLLECTION"
	EnvDimensions = "MILVUS_DIMENSIONS"
)

// Secret keys Env refers to.
const (
	SecretKeyAddress = "address"
	SecretKeyToken   = "token"
)

// Env returns the environment a pod needs to reach Milvus, for a
// container of any cube builder: the address and token come from the
// Secret secretName (keys "address" and "token") by secretKeyRef, never
// as literals; the collection and dimensions are plain values.
func Env(secretName, collection string, dimensions int) []corev1.EnvVar {
	ref := func(key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secretName}, Key: key}}
	}
	return []corev1.EnvVar{
		{Name: EnvAddress, ValueFrom: ref(SecretKeyAddress)},
		{Name: EnvToken, ValueFrom: ref(SecretKeyToken)},
		{Name: EnvCollection, Value: collection},
		{Name: EnvDimensions, Value: strconv.Itoa(dimensions)},
	}
}

// ConfigFromEnv reads the Config that Env gives a pod; every missing or
// malformed variable is reported.
func ConfigFromEnv() (Config, error) {
	var errs []error
	c := Config{Address: os.Getenv(EnvAddress), APIKey: os.Getenv(EnvToken), Collection: os.Getenv(EnvCollection)}
	if c.Address == "" {
		errs = append(errs, fmt.Errorf("%s: unset or empty", EnvAddress))
	}
	if c.Collection == "" {
		errs = append(errs, fmt.Errorf("%s: unset or empty", EnvCollection))
	}
	d, err := strconv.Atoi(os.Getenv(EnvDimensions))
	if err != nil || d <= 0 {
		errs = append(errs, fmt.Errorf("%s: %q: must be a positive number", EnvDimensions, os.Getenv(EnvDimensions)))
	}
	c.Dimensions = d
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("milvus config from env: %w", errors.Join(errs...))
	}
	return c, nil
}

// String describes the config without its token.
func (c Config) String() string {
	return fmt.Sprintf("milvus.Config{Address: %q, Collection: %q, Dimensions: %d, token set: %t}",
		c.Address, c.Collection, c.Dimensions, c.APIKey != "")
}
