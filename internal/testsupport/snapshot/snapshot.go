package snapshot

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Of prints every field of v, exported or not, following pointers
// (each once) and printing funcs and channels as set or not, so that a test
// sees whether a call changed a builder anywhere inside it.
// (tune/snapshot_test.go holds the same helper; both belong in the test
// support tree once it exists.)
func Of(v any) string {
	var b strings.Builder
	seen := map[uintptr]bool{}
	var walk func(r reflect.Value)
	walk = func(r reflect.Value) {
		switch r.Kind() {
		case reflect.Pointer:
			if r.IsNil() {
				b.WriteString("nil")
				return
			}
			if seen[r.Pointer()] {
				b.WriteString("<seen>")
				return
			}
			seen[r.Pointer()] = true
			b.WriteString("&")
			walk(r.Elem())
		case reflect.Interface:
			if r.IsNil() {
				b.WriteString("nil")
				return
			}
			walk(r.Elem())
		case reflect.Struct:
			b.WriteString(r.Type().String() + "{")
			for i := range r.NumField() {
				b.WriteString(r.Type().Field(i).Name + ":")
				walk(r.Field(i))
				b.WriteString(" ")
			}
			b.WriteString("}")
		case reflect.Slice, reflect.Array:
			if r.Kind() == reflect.Slice && r.IsNil() {
				b.WriteString("nil")
				return
			}
			b.WriteString("[")
			for i := range r.Len() {
				walk(r.Index(i))
				b.WriteString(" ")
			}
			b.WriteString("]")
		case reflect.Map:
			if r.IsNil() {
				b.WriteString("nil")
				return
			}
			keys := r.MapKeys()
			slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(fmt.Sprint(x), fmt.Sprint(y)) })
			b.WriteString("map[")
			for _, k := range keys {
				fmt.Fprintf(&b, "%v:", k)
				walk(r.MapIndex(k))
				b.WriteString(" ")
			}
			b.WriteString("]")
		case reflect.Func, reflect.Chan, reflect.UnsafePointer:
			fmt.Fprintf(&b, "set=%t", !r.IsNil())
		default:
			fmt.Fprintf(&b, "%v", r)
		}
	}
	walk(reflect.ValueOf(v))
	return b.String()
}

// TestObjectsLeavesBuilder checks that rendering computes its defaults
// (the workspace's path and access mode, the executor's account, step
// labels) into locals: a pipeline and its steps read the same after
// Objects, Build, a schedule's Objects and the pictures as before.
