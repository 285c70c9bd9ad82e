// Package quantity parses the resource quantities users give cube
// ("16Gi", "500m", "1e3") as apimachinery's resource.ParseQuantity does,
// after refusing the inputs it cannot parse in reasonable time.
//
// resource.ParseQuantity (k8s.io/apimachinery v0.37.2,
// pkg/api/resource/quantity.go and suffix.go) reads the exponent of a
// decimal-exponent quantity with strconv.ParseInt and converts it to int32
// without a range check, then scales and rounds an inf.Dec by it:
// "92233720E6854775807" wraps to an exponent of -1735158785 and the
// rounding runs for hours (found by vgpu's FuzzSlice). Exponents beyond
// ±1000 are refused here; 1e-1000 already rounds up to 1n and 1e1000 is
// far beyond any resource.
package quantity
