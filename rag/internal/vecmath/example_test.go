package vecmath_test

import (
	"fmt"

	"github.com/cubestudio/cube/rag/internal/vecmath"
)

func ExampleNormalize() {
	v := []float32{3, 4}
	ok := vecmath.Normalize(v)
	fmt.Println(ok, v, vecmath.Dot(v, v))
	fmt.Println(vecmath.Normalize([]float32{0, 0}))
	// Output:
	// true [0.6 0.8] 1
	// false
}
