// Command glean is the user and admin CLI (sidecar/cli: status, show,
// cancel, sim, showbf, ...; glean(1)).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/glean-hpc/glean/sidecar/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
