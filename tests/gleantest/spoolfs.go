package gleantest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// SpoolOnTmpfs puts the spool on a tmpfs of mb megabytes (a small
// filesystem to fill), before the daemon starts. Unmount removes it.
func (e *Env) SpoolOnTmpfs(mb int) error {
	if err := os.RemoveAll(e.Spool); err != nil {
		return err
	}
	if err := os.Mkdir(e.Spool, 0o755); err != nil {
		return err
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm,mode=0755", mb), "glean-spool", e.Spool).CombinedOutput(); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %v: %s", e.Spool, err, out)
	}
	return e.initSpool()
}

// Unmount unmounts a tmpfs spool.
func (e *Env) Unmount() error {
	out, err := exec.Command("umount", "-l", e.Spool).CombinedOutput()
	if err != nil {
		return fmt.Errorf("umount %s: %v: %s", e.Spool, err, out)
	}
	return nil
}

// Fill writes a root-owned file into the spool until its filesystem is
// full, and returns the file's path (remove it to free the space).
func (e *Env) Fill() (string, error) {
	p := filepath.Join(e.Spool, "filler")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return p, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			break // ENOSPC: full
		}
	}
	// Small writes fill the last blocks.
	for {
		if _, err := f.Write(buf[:512]); err != nil {
			return p, nil
		}
	}
}
