package submit

import (
	"strings"
	"testing"

	"github.com/glean-hpc/glean/sidecar/submit"
)

// probe runs the real sbatch with args and empty stdin and returns stderr.
func probe(t *testing.T, args ...string) string {
	t.Helper()
	cmd := cl.Command(t.Context(), "sbatch", append([]string{"--hold"}, args...)...)
	cmd.Stdin = strings.NewReader("")
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// The wrapper's option table is the installed sbatch's: every long option
// takes a value exactly when sbatch's does, and every letter is a short
// option exactly when it is one for sbatch. (glean's own --glean is only
// known to sbatch with the SPANK plugin, which this cluster does not load.)
func TestOptionTableMatchesSbatch(t *testing.T) {
	setup(t)
	shorts := map[byte]submit.Option{}
	for _, o := range submit.Options() {
		if o.Short != 0 {
			shorts[o.Short] = o
		}
		if o.Long == "glean" {
			if out := probe(t, "--glean"); !strings.Contains(out, "unrecognized option '--glean'") {
				t.Errorf("--glean without the SPANK plugin: %q", out)
			}
			continue
		}
		withValue := probe(t, "--"+o.Long+"=zz9")
		alone := probe(t, "--"+o.Long)
		if strings.Contains(withValue, "unrecognized option") || strings.Contains(alone, "unrecognized option") {
			t.Errorf("--%s: sbatch does not know it: %q", o.Long, withValue)
			continue
		}
		refusesValue := strings.Contains(withValue, "option '--"+o.Long+"' doesn't allow an argument")
		needsValue := strings.Contains(alone, "option '--"+o.Long+"' requires an argument")
		var got submit.ArgKind
		switch {
		case refusesValue && !needsValue:
			got = submit.NoArg
		case needsValue && !refusesValue:
			got = submit.RequiredArg
		case !needsValue && !refusesValue:
			got = submit.OptionalArg
		default:
			t.Errorf("--%s: confusing answers %q / %q", o.Long, withValue, alone)
			continue
		}
		if got != o.Arg {
			t.Errorf("--%s: sbatch's kind %d, the table says %d", o.Long, got, o.Arg)
		}
	}
	for c := byte('A'); c <= 'z'; c++ {
		if c > 'Z' && c < 'a' {
			continue
		}
		out := probe(t, "-"+string(c))
		o, known := shorts[c]
		invalid := strings.Contains(out, "invalid option -- '"+string(c)+"'")
		needs := strings.Contains(out, "option requires an argument -- '"+string(c)+"'")
		switch {
		case !known && !invalid:
			t.Errorf("-%c: sbatch knows it, the table does not: %q", c, out)
		case known && invalid:
			t.Errorf("-%c (--%s): sbatch does not know it", c, o.Long)
		case known && needs != (o.Arg == submit.RequiredArg):
			t.Errorf("-%c (--%s): sbatch requires an argument: %v; the table says kind %d", c, o.Long, needs, o.Arg)
		}
	}
	// Unique prefixes and ambiguity are getopt's.
	if out := probe(t, "--tim=3"); !strings.Contains(out, "option '--tim=3' is ambiguous; possibilities: '--time' '--time-min'") {
		t.Errorf("--tim=3: %q", out)
	}
	if _, err := submit.ParseCLI([]string{"--tim=3"}); err == nil || err.Error() != "option '--tim=3' is ambiguous; possibilities: '--time' '--time-min'" {
		t.Errorf("the wrapper's parser says %v", err)
	}
}
