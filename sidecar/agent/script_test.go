package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// A script directory left by an agent that was killed (its pid gone) is
// removed by the next agent of the user; a live agent's, and one without
// a pid yet, are kept.
func TestRemoveStaleScripts(t *testing.T) {
	tmp := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{ // name -> pid file content ("" = none)
		scriptDirPrefix + "dead":  strconv.Itoa(dead.Process.Pid),
		scriptDirPrefix + "live":  strconv.Itoa(os.Getppid()),
		scriptDirPrefix + "nopid": "",
		"other-dead":              strconv.Itoa(dead.Process.Pid),
	}
	for name, pid := range dirs {
		d := filepath.Join(tmp, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "script"), []byte("#!/bin/sh\n"), 0o700); err != nil {
			t.Fatal(err)
		}
		if pid != "" {
			if err := os.WriteFile(filepath.Join(d, scriptPIDFile), []byte(pid), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	removeStaleScripts(tmp, os.Getuid())
	for name := range dirs {
		_, err := os.Stat(filepath.Join(tmp, name))
		if gone, want := os.IsNotExist(err), name == scriptDirPrefix+"dead"; gone != want {
			t.Errorf("%s: removed %v, want %v", name, gone, want)
		}
	}
	// Another user's directories are never touched.
	removeStaleScripts(tmp, os.Getuid()+1)
	if _, err := os.Stat(filepath.Join(tmp, scriptDirPrefix+"live")); err != nil {
		t.Errorf("another uid's sweep touched ours: %v", err)
	}
}
