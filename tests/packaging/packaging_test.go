// Package packaging checks what an admin installs: `make install` into a
// staging directory, and the RPM that `make rpm` builds from contrib/glean.spec.
// Neither needs Slurm; the RPM test needs rpmbuild (make deps installs it).
package packaging

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/glean-hpc/glean/sidecar/config"
	"github.com/glean-hpc/glean/tests/gleantest"
)

// makeIn runs make in the repository with vars and fails the test on error.
func makeIn(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("make", append([]string{"-s", "-C", gleantest.RepoRoot()}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// unitPaths returns the absolute paths a unit's Exec lines name.
func unitPaths(t *testing.T, unit string) (exec []string, keys map[string]string) {
	t.Helper()
	f, err := os.Open(unit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys = map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		keys[k] = v
		if strings.HasPrefix(k, "Exec") {
			for _, w := range strings.Fields(v) {
				if strings.HasPrefix(w, "/") {
					exec = append(exec, w)
				}
			}
		}
	}
	return exec, keys
}

// specVersion is contrib/glean.spec's Version, which make stamps into the binaries.
func specVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(gleantest.RepoRoot(), "contrib", "glean.spec"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Version:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("contrib/glean.spec has no Version:")
	return ""
}

func TestMakeInstall(t *testing.T) {
	for _, tc := range []struct {
		name                              string
		vars                              []string // make variables beyond DESTDIR
		bin, etc, unitDir, libexec, share string
		man, spool                        string
	}{
		{"defaults", nil, "/usr/bin", "/etc/glean", "/usr/lib/systemd/system", "/usr/libexec/glean", "/usr/share/glean", "/usr/share/man", "/var/spool/glean"},
		{"under /opt", []string{"PREFIX=/opt/glean", "SYSCONFDIR=/opt/glean/etc", "UNITDIR=/etc/systemd/system", "SPOOLDIR=/shared/glean"},
			"/opt/glean/bin", "/opt/glean/etc/glean", "/etc/systemd/system", "/opt/glean/libexec/glean", "/opt/glean/share/glean", "/opt/glean/share/man", "/shared/glean"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dest := t.TempDir()
			vars := append([]string{"install", "DESTDIR=" + dest, "BIN=" + filepath.Join(t.TempDir(), "bin")}, tc.vars...)
			makeIn(t, vars...)
			at := func(p string) string { return filepath.Join(dest, p) }

			for _, b := range []string{"glean", "gleand", "glean-agent", "glean-helper"} {
				p := at(filepath.Join(tc.bin, b))
				st, err := os.Stat(p)
				if err != nil || st.Mode()&0o111 == 0 {
					t.Fatalf("%s: not an installed executable (%v)", p, err)
				}
				out, err := exec.Command(p, "version").CombinedOutput()
				if err != nil || !strings.HasPrefix(string(out), b+" ") {
					t.Errorf("%s version: %q, %v", p, out, err)
				}
				// The spec's version (glean-helper reports its build's own).
				if b != "glean-helper" && !strings.Contains(string(out), " "+specVersion(t)) {
					t.Errorf("%s version: %q, want the spec's %s", p, out, specVersion(t))
				}
			}
			for p, exe := range map[string]bool{
				tc.libexec + "/pilot.sh": true, tc.share + "/wrappers/sbatch": true, tc.share + "/glean.sh": false,
				tc.share + "/examples/montecarlo.sh": true,
			} {
				st, err := os.Stat(at(p))
				if err != nil || exe && st.Mode()&0o111 == 0 {
					t.Errorf("%s: missing or not executable (%v)", p, err)
				}
			}
			// The wrapper is a #! line naming the installed glean: a wrong
			// one would break every plain sbatch on the cluster.
			if w, err := os.ReadFile(at(tc.share + "/wrappers/sbatch")); err != nil ||
				!strings.HasPrefix(string(w), "#!"+tc.bin+"/glean sbatch-wrapper\n") {
				first, _, _ := strings.Cut(string(w), "\n")
				t.Errorf("the installed wrapper's first line is %q (%v), want #!%s/glean sbatch-wrapper", first, err, tc.bin)
			}
			// glean sim's default workload is built in: it runs from a
			// directory with no ../shared/workloads above.
			sim := exec.Command(at(filepath.Join(tc.bin, "glean")), "sim", "--mode", "slurm")
			sim.Dir = t.TempDir()
			if out, err := sim.CombinedOutput(); err != nil || !strings.Contains(string(out), "workload thesis-submit-list-1.txt, 24 nodes") {
				t.Errorf("installed glean sim: %v\n%s", err, out)
			}

			// The units start the installed binaries with the installed config.
			for _, u := range []string{"gleand.service", "glean-helper.service"} {
				paths, keys := unitPaths(t, at(filepath.Join(tc.unitDir, u)))
				if keys["Type"] != "notify" {
					t.Errorf("%s: Type=%s, want notify", u, keys["Type"])
				}
				// Both read the spool, which may be a mount of its own.
				if keys["RequiresMountsFor"] != tc.spool || !strings.Contains(keys["After"], "remote-fs.target") {
					t.Errorf("%s: RequiresMountsFor=%s, After=%s; want the spool %s and remote-fs.target", u, keys["RequiresMountsFor"], keys["After"], tc.spool)
				}
				// Without a helper (helper.socket = "") glean-helper exits 0
				// at once: gleand must not Require= it (nor fail with it).
				if u == "gleand.service" && (strings.Contains(keys["Requires"], "glean-helper") || !strings.Contains(keys["Wants"], "glean-helper.service") ||
					!strings.Contains(keys["After"], "glean-helper.service")) {
					t.Errorf("%s: Requires=%s Wants=%s After=%s; want Wants= and After= glean-helper.service", u, keys["Requires"], keys["Wants"], keys["After"])
				}
				if len(paths) < 2 {
					t.Errorf("%s: Exec lines name %v", u, paths)
				}
				for _, p := range paths {
					if p == "/bin/kill" { // ExecReload's: the system's own
						continue
					}
					if _, err := os.Stat(at(p)); err != nil {
						t.Errorf("%s names %s, which is not installed", u, p)
					}
				}
				if !strings.HasPrefix(paths[0], tc.bin+"/") {
					t.Errorf("%s runs %s, not from %s", u, paths[0], tc.bin)
				}
			}
			if _, keys := unitPaths(t, at(filepath.Join(tc.unitDir, "gleand.service"))); keys["WatchdogSec"] == "" {
				t.Error("gleand.service: no WatchdogSec")
			}
			// Both reload by SIGHUP (SIGHUP's default would end them).
			for _, u := range []string{"gleand.service", "glean-helper.service"} {
				if _, keys := unitPaths(t, at(filepath.Join(tc.unitDir, u))); keys["ExecReload"] != "/bin/kill -HUP $MAINPID" {
					t.Errorf("%s: the last ExecReload is %q, want SIGHUP to the main pid", u, keys["ExecReload"])
				}
			}

			checkManPages(t, at(tc.man), tc.share)

			// The config loads and names the installed agent and pilot script.
			conf := at(tc.etc + "/glean.toml")
			cfg, err := config.Load(conf)
			if err != nil {
				t.Fatalf("installed config: %v", err)
			}
			for _, p := range []string{cfg.Helper.Agent, cfg.Helper.PilotScript} {
				if _, err := os.Stat(at(p)); err != nil {
					t.Errorf("glean.toml names %s, which is not installed", p)
				}
			}
			if want := tc.libexec + "/pilot.sh"; cfg.Helper.PilotScript != want {
				t.Errorf("helper.pilot_script = %s, want %s", cfg.Helper.PilotScript, want)
			}

			// A second install keeps the admin's config and puts the new one beside it.
			mine := []byte("# the site's own\n[spool]\ndir = \"/shared/glean\"\n")
			if err := os.WriteFile(conf, mine, 0o644); err != nil {
				t.Fatal(err)
			}
			out := makeIn(t, vars...)
			if got, _ := os.ReadFile(conf); !bytes.Equal(got, mine) {
				t.Errorf("a second install overwrote the changed config:\n%s", got)
			}
			if _, err := config.Load(conf + ".new"); err != nil {
				t.Errorf("no loadable %s.new beside the kept config: %v", conf, err)
			}
			if !strings.Contains(out, "is kept") {
				t.Errorf("the second install did not say the config was kept:\n%s", out)
			}
		})
	}
}

// manPages are the pages make install puts under MANDIR (ARCHITECTURE: the RPM has them).
var manPages = []string{"man1/glean.1", "man1/glean-sbatch.1", "man5/glean.toml.5", "man8/gleand.8", "man8/glean-helper.8", "man8/glean-agent.8"}

// checkManPages checks that every page is installed under mandir with the
// version and paths filled in, and that groff (and mandoc, where
// installed) renders it without a warning.
func checkManPages(t *testing.T, mandir, share string) {
	t.Helper()
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Error("groff is not installed: the man pages cannot be checked (Debian: apt-get install groff-base)")
	}
	mandoc, _ := exec.LookPath("mandoc")
	for _, p := range manPages {
		page := filepath.Join(mandir, p)
		text, err := os.ReadFile(page)
		if err != nil {
			t.Errorf("man page %s: %v", p, err)
			continue
		}
		if s := string(text); strings.Contains(s, "@VERSION@") || !strings.Contains(s, `"glean `+specVersion(t)+`"`) {
			t.Errorf("%s: the version is not filled in:\n%s", p, strings.SplitN(s, "\n", 2)[0])
		}
		if p == "man1/glean-sbatch.1" && !strings.Contains(string(text), share+"/wrappers") {
			t.Errorf("%s does not name the installed wrapper directory %s/wrappers", p, share)
		}
		for _, lint := range [][]string{{groff, "-man", "-Tutf8", "-ww", "-z", page}, {mandoc, "-T", "lint", "-W", "warning", page}} {
			if lint[0] == "" {
				continue
			}
			out, err := exec.Command(lint[0], lint[1:]...).CombinedOutput()
			if err != nil || len(bytes.TrimSpace(out)) > 0 {
				t.Errorf("%s: %v\n%s", strings.Join(lint, " "), err, out)
			}
		}
	}
}

// TestRPM builds the RPM from `make dist` and checks its files and
// scriptlets. It needs rpmbuild (Debian's package rpm; make deps installs
// it) and a git checkout (make dist archives HEAD).
func TestRPM(t *testing.T) {
	if _, err := exec.LookPath("rpmbuild"); err != nil {
		t.Skip("rpmbuild not installed (apt-get install rpm, or make deps as root)")
	}
	if _, err := os.Stat(filepath.Join(gleantest.RepoRoot(), ".git")); err != nil {
		t.Skip("not a git checkout: make dist archives HEAD")
	}
	dist := t.TempDir()
	makeIn(t, "rpm", "DISTDIR="+dist)
	rpms, _ := filepath.Glob(filepath.Join(dist, "rpmbuild", "RPMS", "*", "glean-[0-9]*.rpm"))
	if len(rpms) != 1 {
		t.Fatalf("RPMs built: %v", rpms)
	}
	q := func(args ...string) string {
		out, err := exec.Command("rpm", append(args, rpms[0])...).CombinedOutput()
		if err != nil {
			t.Fatalf("rpm %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	files := q("-qlp")
	for _, f := range []string{"/usr/bin/gleand", "/usr/bin/glean-helper", "/usr/bin/glean", "/usr/bin/glean-agent",
		"/usr/lib/systemd/system/gleand.service", "/usr/lib/systemd/system/glean-helper.service",
		"/usr/libexec/glean/pilot.sh", "/usr/share/glean/wrappers/sbatch", "/usr/share/glean/glean.sh",
		"/etc/glean/glean.toml", "/var/spool/glean"} {
		if !strings.Contains(files, f+"\n") {
			t.Errorf("the RPM lacks %s:\n%s", f, files)
		}
	}
	for _, p := range manPages { // compressed or not, as the build host's rpm does it
		if !strings.Contains(files, "/usr/share/man/"+p) {
			t.Errorf("the RPM lacks the man page %s:\n%s", p, files)
		}
	}
	if c := q("-qcp"); !strings.Contains(c, "/etc/glean/glean.toml") {
		t.Errorf("glean.toml is not a config file: %q", c)
	}
	scripts := q("-qp", "--scripts")
	for _, want := range []string{"useradd -r -g glean", "groupadd -r glean", "gleand.service glean-helper.service",
		"[ -e /var/spool/glean ] || install -d -m 0755 -o glean -g glean /var/spool/glean"} {
		if !strings.Contains(scripts, want) {
			t.Errorf("scriptlets lack %q:\n%s", want, scripts)
		}
	}
	if v := q("-qlvp"); !strings.Contains(v, "glean    glean") || !strings.Contains(v, "/var/spool/glean") {
		t.Errorf("the spool is not owned by glean:\n%s", v)
	}
	// A ghost: rpm never chowns or chmods an existing (shared) spool.
	if v := q("-qp", "--qf", "[%{FILEFLAGS:fflags} %{FILENAMES}\n]"); !regexp.MustCompile(`(?m)^\S*g\S* /var/spool/glean$`).MatchString(v) {
		t.Errorf("the spool is not a %%ghost in the RPM:\n%s", v)
	}
}

// systemd itself reads the installed units without a complaint (an unknown
// directive or a bad value is only a warning to systemd: the output must be
// empty). Installed without DESTDIR under a temporary prefix, so that the
// binaries the units name exist.
func TestUnitsVerify(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze not installed")
	}
	root := t.TempDir()
	makeIn(t, "install", "BIN="+filepath.Join(root, "build"), "PREFIX="+root+"/usr", "SYSCONFDIR="+root+"/etc",
		"UNITDIR="+root+"/units", "SYSUSERSDIR="+root+"/sysusers", "TMPFILESDIR="+root+"/tmpfiles", "SPOOLDIR="+root+"/spool")
	units, _ := filepath.Glob(filepath.Join(root, "units", "*.service"))
	if len(units) != 2 {
		t.Fatalf("units installed: %v", units)
	}
	out, err := exec.Command("systemd-analyze", append([]string{"verify", "--man=no"}, units...)...).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
