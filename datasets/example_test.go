package datasets_test

import (
	"fmt"

	"github.com/cubestudio/cube/datasets"
)

// A preference dataset of ShareGPT conversations whose chosen and
// rejected answers are in columns of other names.
func ExamplePreferenceData() {
	d := datasets.PreferenceData("pairs", "hf://org/pairs", datasets.ShareGPT)
	d.Columns = map[string]string{"chosen": "better", "rejected": "worse"}
	fmt.Println(d.Name, d.Source, d.Format, d.Kind, d.Columns["chosen"])
	// Output:
	// pairs hf://org/pairs sharegpt preferences better
}

func ExampleInstructionData() {
	d := datasets.InstructionData("support", "pvc://datasets/support.json", datasets.Alpaca)
	fmt.Printf("%s: %s records teaching %s\n", d.Name, d.Format, d.Kind)
	// Output:
	// support: alpaca records teaching instructions
}
