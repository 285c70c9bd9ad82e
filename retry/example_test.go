package retry_test

import (
	"fmt"
	"time"

	"github.com/cubestudio/cube/retry"
)

func ExamplePolicy_Delay() {
	p := retry.Policy{Limit: 4, Backoff: time.Second, Factor: 2, MaxBackoff: 5 * time.Second}
	for n := 1; n <= p.Limit; n++ {
		fmt.Println(n, p.Delay(n))
	}
	fmt.Println(retry.Policy{Limit: -1}.Err())
	// Output:
	// 1 1s
	// 2 2s
	// 3 4s
	// 4 5s
	// retry.limit: invalid value -1: must not be negative
}
