package spool

import (
	"os"
	"testing"

	"github.com/glean-hpc/glean/sidecar/internal/hostilefs"
)

// The FUSE mounts of mount_test.go are made in a mount namespace of the
// tests' own (hostilefs.Main says why).
func TestMain(m *testing.M) { os.Exit(hostilefs.Main(m)) }
