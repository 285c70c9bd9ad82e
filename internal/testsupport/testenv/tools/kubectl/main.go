// Command kubectl is kubectl v1.37 for the test cluster's images: the body
// of k8s.io/kubernetes/cmd/kubectl/kubectl.go, built from the published
// k8s.io/kubectl module so that kubectl's dependencies need not join the
// node's tools module.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) //nolint:errcheck
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
