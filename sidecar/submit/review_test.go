package submit

import (
	"os"
	"path/filepath"
	"testing"
)

// Only the option itself makes a submission a candidate for glean: the
// word in a job name, a path or a comment must pass through untouched,
// even when glean's option table could not parse the rest of the line.
func TestMentionsGleanOnlyTheOption(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		env    []string
		script string
		want   bool
	}{
		{"option", []string{"--glean", "a.sh"}, nil, "", true},
		{"option with value", []string{"--glean=mode=fair", "a.sh"}, nil, "", true},
		{"abbreviation", []string{"--gle", "a.sh"}, nil, "", true},
		{"job name", []string{"-J", "gleaning", "a.sh"}, nil, "", false},
		{"path", []string{"--tres-per-task=gres/gpu:1", "/home/u/glean-tests/job.sh"}, nil, "", false},
		{"env", nil, []string{"SBATCH_GLEAN=mode=fair"}, "", true},
		{"directive", nil, nil, "#!/bin/sh\n#SBATCH --glean\nrun\n", true},
		{"comment mentions the word", nil, nil, "#!/bin/sh\n# glean would help here\nrun\n", false},
		{"after the first command", nil, nil, "#!/bin/sh\nrun\n#SBATCH --glean\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var script []byte
			if tc.script != "" {
				script = []byte(tc.script)
			}
			if got := MentionsGlean(tc.args, tc.env, script); got != tc.want {
				t.Fatalf("MentionsGlean = %v, want %v", got, tc.want)
			}
		})
	}
}

// A configured real_sbatch that does not exist must not break plain
// sbatch: the search falls back to PATH.
func TestFindRealSbatchBadConfigFallsBack(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "sbatch")
	if err := os.WriteFile(real, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := FindRealSbatch("/nonexistent/bin/sbatch", dir, "", nil)
	if err != nil || got != real {
		t.Fatalf("FindRealSbatch = %q, %v; want %q from PATH", got, err, real)
	}
	got, err = FindRealSbatch(real, "", "", nil)
	if err != nil || got != real {
		t.Fatalf("a valid configured path: %q, %v", got, err)
	}
}

// With no sbatch in PATH but glean's wrapper (a minimal PATH), the real
// one is Slurm's package's, as the old shell wrapper found it; a glean
// wrapper there, or one already visited, is never taken.
func TestFindRealSbatchDefault(t *testing.T) {
	old := DefaultSbatch
	t.Cleanup(func() { DefaultSbatch = old })
	dir, wrappers := t.TempDir(), t.TempDir()
	self := filepath.Join(wrappers, "sbatch")
	if err := os.WriteFile(self, []byte("#!/usr/bin/glean sbatch-wrapper\n# "+WrapperMarker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	DefaultSbatch = filepath.Join(dir, "sbatch")
	if _, err := FindRealSbatch("", wrappers, self, nil); err == nil {
		t.Fatal("found an sbatch where there is none")
	}
	if err := os.WriteFile(DefaultSbatch, []byte("\x7fELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := FindRealSbatch("", wrappers, self, nil); err != nil || got != DefaultSbatch {
		t.Errorf("FindRealSbatch = %q, %v; want %s", got, err, DefaultSbatch)
	}
	if got, err := FindRealSbatch("", wrappers, self, []string{DefaultSbatch}); err == nil {
		t.Errorf("a visited %s taken again: %q", DefaultSbatch, got)
	}
	DefaultSbatch = self
	if got, err := FindRealSbatch("", "", self, nil); err == nil {
		t.Errorf("glean's wrapper taken for the real sbatch: %q", got)
	}
}
