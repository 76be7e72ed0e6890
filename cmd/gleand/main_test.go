package main

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// TestLoadConfigSpool: the check a start, -check-config and a reload run
// looks at spool.dir without creating it. A typo used to pass the check;
// the restart then failed, or made an empty spool where the parent was
// writable. A fresh empty spool (tmpfiles.d, the package's %post) still
// passes, for gleand's first start to lay it out.
func TestLoadConfigSpool(t *testing.T) {
	g, err := user.LookupGroupId(strconv.Itoa(os.Getgid()))
	if err != nil {
		t.Skip(err)
	}
	root := t.TempDir()
	laid := filepath.Join(root, "laid")
	rs, err := (&spool.Spool{Dir: laid}).Init(-1)
	if err != nil {
		t.Fatal(err)
	}
	rs.Close()
	fresh := filepath.Join(root, "fresh")
	if err := os.Mkdir(fresh, 0o755); err != nil {
		t.Fatal(err)
	}
	config := func(dir string) string {
		p := filepath.Join(t.TempDir(), "glean.toml")
		text := "[spool]\ndir = " + strconv.Quote(dir) + "\ngroup = " + strconv.Quote(g.Name) + "\n"
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, dir string
		want      string // in the error; "" for none
	}{
		{"laid out", laid, ""},
		{"fresh", fresh, ""},
		{"typo", filepath.Join(root, "lais"), "spool.dir: " + filepath.Join(root, "lais") + " does not exist"},
		{"not a spool", root, "spool.dir: " + root + " is not a glean spool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := config(tc.dir)
			_, _, err := loadConfig(path)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), path+": ")) {
				t.Errorf("loadConfig: %v, want %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("more than one line: %q", err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(root, "lais")); err == nil {
		t.Error("the check created the spool")
	}

	// A reload that moves spool.dir: only to a glean spool.
	for _, tc := range []struct {
		name, to string
		ok       bool
	}{
		{"same", laid + "/", true},
		{"to another spool", laid, true},
		{"to a missing one", filepath.Join(root, "lais"), false},
		{"to a fresh one", fresh, false},
	} {
		from := laid
		if tc.name == "to another spool" {
			from = filepath.Join(root, "old")
		}
		err := checkSpoolMove("glean.toml", from, tc.to)
		if (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), "glean.toml: spool.dir: moved from "+from) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
