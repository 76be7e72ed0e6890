// Command gleand is the head-node daemon. Its loop (observe, decide, act)
// arrives with the execution-path issue; until then it only says so.
package main

import (
	"fmt"
	"os"

	"github.com/glean-hpc/glean/sidecar/cli"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "--version" || os.Args[1] == "version") {
		fmt.Println("gleand", cli.Version)
		return
	}
	fmt.Fprintln(os.Stderr, "gleand: the daemon loop is not implemented yet (execution-path issue #5)")
	os.Exit(2)
}
