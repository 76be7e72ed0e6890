package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glean-hpc/glean/sidecar/sdnotify/sdnotifytest"
)

// TestNoSocketExitsCleanly: with helper.socket = "" (gleand acts on Slurm
// itself, a documented mode) the helper has nothing to do. It used to fail
// (exit 1), and gleand.service, which Required= it, could not start. Now
// it says READY=1 with why, logs one line and ends successfully, which
// Restart=on-failure leaves alone.
func TestNoSocketExitsCleanly(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "glean.toml")
	if err := os.WriteFile(conf, []byte("[helper]\nsocket = \"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "notify")
	msgs := sdnotifytest.Listen(t, sock)
	t.Setenv("NOTIFY_SOCKET", sock)
	var logs bytes.Buffer
	if err := run(context.Background(), conf, nil, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Fatalf("run: %v", err)
	}
	if !strings.Contains(logs.String(), "glean-helper not needed, exiting") || strings.Count(logs.String(), "\n") != 1 {
		t.Errorf("log:\n%s", logs.String())
	}
	m := <-msgs
	if !strings.Contains(m.Text, "READY=1") || !strings.Contains(m.Text, "STATUS=not needed: helper.socket is empty") {
		t.Errorf("sd_notify: %q", m.Text)
	}
	// -check-config passes it (a start succeeds); a reload's check (setup)
	// still refuses to switch a running helper to it.
	if _, err := setup(conf, slog.New(slog.NewTextHandler(&logs, nil))); !errors.Is(err, errNotNeeded) {
		t.Errorf("setup: %v", err)
	}
}
