package submit

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func settingsString(sets []Setting) string {
	var b []string
	for _, s := range sets {
		if s.HasValue {
			b = append(b, s.Opt.Long+"="+s.Value)
		} else {
			b = append(b, s.Opt.Long)
		}
	}
	return strings.Join(b, " ")
}

func TestParseCLI(t *testing.T) {
	for _, tc := range []struct {
		name, args string // args split on '|'
		want, ops  string
		err        string
	}{
		{"long with =", "--time=5|job.sh", "time=5", "job.sh", ""},
		{"long with next word", "--time|5|job.sh", "time=5", "job.sh", ""},
		{"value may start with a dash", "-J|-weird|job.sh", "job-name=-weird", "job.sh", ""},
		{"short attached", "-t5|-c2|job.sh", "time=5 cpus-per-task=2", "job.sh", ""},
		{"combined flags", "-HvQ|job.sh", "hold verbose quiet", "job.sh", ""},
		{"flags then value", "-Ht|5|job.sh", "hold time=5", "job.sh", ""},
		{"options after the script are its arguments", "-t|5|job.sh|-J|x|--bogus", "time=5", "job.sh -J x --bogus", ""},
		{"double dash ends options", "-t|5|--|-odd-name.sh|a", "time=5", "-odd-name.sh a", ""},
		{"lone dash is an operand", "-", "", "-", ""},
		{"unique prefix", "--parti=batch|--job-n=3|x", "partition=batch job-name=3", "x", ""},
		{"prefix of two options", "--tim=3|x", "", "", "option '--tim=3' is ambiguous; possibilities: '--time' '--time-min'"},
		{"alias", "--tasks-per-node=2|x", "ntasks-per-node=2", "x", ""},
		{"exact name beats prefix", "--mem=1G|x", "mem=1G", "x", ""},
		{"optional arg not given", "--nice|x", "nice", "x", ""},
		{"optional arg does not take the next word", "--exclusive|user", "exclusive", "user", ""},
		{"optional arg given", "--nice=5|--exclusive=user|x", "nice=5 exclusive=user", "x", ""},
		{"short optional -k", "-k|-koff|x", "no-kill no-kill=off", "x", ""},
		{"glean plain", "--glean|--array=0-3|x", "glean array=0-3", "x", ""},
		{"glean value", "--glean=mode=fair|x", "glean=mode=fair", "x", ""},
		{"glean prefix", "--gl|x", "glean", "x", ""},
		{"het separator is an operand", "-t|1|:|-t|2|x", "time=1", ": -t 2 x", ""},
		{"wrap", "--wrap|echo hi", "wrap=echo hi", "", ""},
		{"ambiguous", "--par|x", "", "", "option '--par' is ambiguous; possibilities: '--parsable' '--partition'"},
		{"ambiguous shows the value", "--cpus=2|x", "", "", "option '--cpus=2' is ambiguous; possibilities: '--cpus-per-gpu' '--cpus-per-task'"},
		{"unknown long", "--bogus-opt|x", "", "", "unrecognized option '--bogus-opt'"},
		{"unknown long with value", "--bogus=1|x", "", "", "unrecognized option '--bogus=1'"},
		{"flag with value", "--hold=yes|x", "", "", "option '--hold' doesn't allow an argument"},
		{"missing value", "--time", "", "", "option '--time' requires an argument"},
		{"missing short value", "-t", "", "", "option requires an argument -- 't'"},
		{"unknown short", "-Hz|x", "", "", "invalid option -- 'z'"},
		{"removed option", "--workdir=/tmp|x", "", "", "unrecognized option '--workdir=/tmp'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := strings.Split(tc.args, "|")
			req, err := ParseCLI(args)
			if tc.err != "" {
				var oe *OptError
				if !errors.As(err, &oe) || oe.Msg != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := settingsString(req.CLI); got != tc.want {
				t.Errorf("settings %q, want %q", got, tc.want)
			}
			if got := strings.Join(req.Operands, " "); got != tc.ops {
				t.Errorf("operands %q, want %q", got, tc.ops)
			}
		})
	}
}

func TestScanDirectives(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		words        []string
		lines        []int
		het          bool
		err          string
	}{
		{"basic", "#!/bin/sh\n#SBATCH -J one\n#SBATCH --time=5 -c 2\necho\n", []string{"-J", "one", "--time=5", "-c", "2"}, []int{2, 2, 3, 3, 3}, false, ""},
		{"stops at the first command", "#!/bin/sh\n#SBATCH -J one\nfoo=1\n#SBATCH -J two\n", []string{"-J", "one"}, []int{2, 2}, false, ""},
		{"blank lines and comments do not stop", "#!/bin/sh\n\n   \n# comment\n\t# indented comment\n#SBATCH -t 3\n", []string{"-t", "3"}, []int{6, 6}, false, ""},
		{"indented directive is a comment", "#!/bin/sh\n  #SBATCH -J x\n#sbatch -J y\n", nil, nil, false, ""},
		{"old #SLURM", "#!/bin/sh\n#SLURM -t 7\n", []string{"-t", "7"}, []int{2, 2}, false, ""},
		{"no space after the magic word", "#!/bin/sh\n#SBATCH-J one\n", []string{"-J", "one"}, []int{2, 2}, false, ""},
		{"quotes and trailing comment", "#!/bin/sh\n#SBATCH -J \"a b\" # comment\n", []string{"-J", "a b"}, []int{2, 2}, false, ""},
		{"quotes join", "#!/bin/sh\n#SBATCH  -J  \"x y\"z\n", []string{"-J", "x yz"}, []int{2, 2}, false, ""},
		{"single quotes keep #", "#!/bin/sh\n#SBATCH --comment='a#b'\n", []string{"--comment=a#b"}, []int{2}, false, ""},
		{"backslash escapes quote and #", "#!/bin/sh\n#SBATCH -J a\\\"b\\#c\n", []string{"-J", "a\"b#c"}, []int{2, 2}, false, ""},
		{"backslash does not escape a blank", "#!/bin/sh\n#SBATCH --comment=a\\ b\n", []string{"--comment=a", "b"}, []int{2, 2}, false, ""},
		{"unmatched quote", "#!/bin/sh\n#SBATCH -J \"unterminated\n", nil, nil, false, "q.sh: line 2: Unmatched `\"` in [ \"unterminated]"},
		{"colon", "#!/bin/sh\n#SBATCH -t 3 : -J x\n", nil, nil, false, "q.sh: line 2: Unexpected `:` in [ : -J x]"},
		{"hetjob line", "#!/bin/sh\n#SBATCH -t 3\n#SBATCH hetjob\n#SBATCH -t 4\n", []string{"-t", "3", "-t", "4"}, []int{2, 2, 4, 4}, true, ""},
		// sbatch 22.05.8 (measured with -v): only a word hetjob/packjob separates
		// components; one starting a line makes it a separator, one later on a
		// line ends that line; the letters elsewhere are ordinary.
		{"hetjob in a path", "#!/bin/sh\n#SBATCH -o /scratch/hetjob/%j.out\n", []string{"-o", "/scratch/hetjob/%j.out"}, []int{2, 2}, false, ""},
		{"hetjob in a name", "#!/bin/sh\n#SBATCH -J myhetjobtest\n", []string{"-J", "myhetjobtest"}, []int{2, 2}, false, ""},
		{"packjob as a value", "#!/bin/sh\n#SBATCH --comment=packjob\n", []string{"--comment=packjob"}, []int{2}, false, ""},
		{"hetjob in a comment", "#!/bin/sh\n#SBATCH -J x # hetjob\n", []string{"-J", "x"}, []int{2, 2}, false, ""},
		{"hetjobs is a word", "#!/bin/sh\n#SBATCH hetjobs\n", []string{"hetjobs"}, []int{2}, false, ""},
		{"hetjob# is a word", "#!/bin/sh\n#SBATCH hetjob#x\n", []string{"hetjob"}, []int{2}, false, ""},
		{"separator in any case after a tab", "#!/bin/sh\n#SBATCH -J x\n#SBATCH\tHetJob\n#SBATCH -t 5\n", []string{"-J", "x", "-t", "5"}, []int{2, 2, 4, 4}, true, ""},
		{"separator without a blank", "#!/bin/sh\n#SBATCHpackjob\n", nil, nil, true, ""},
		{"separator drops the rest of its line", "#!/bin/sh\n#SBATCH hetjob -t 7\n#SBATCH -t 5\n", []string{"-t", "5"}, []int{3, 3}, true, ""},
		{"hetjob later on a line ends it", "#!/bin/sh\n#SBATCH -J x PACKJOB -t 9\n#SBATCH --comment=c\n", []string{"-J", "x", "--comment=c"}, []int{2, 2, 3}, false, ""},
		{"hetjob as a value is dropped", "#!/bin/sh\n#SBATCH -J hetjob\n#SBATCH -t 5\n", []string{"-J", "-t", "5"}, []int{2, 3, 3}, false, ""},
		{"quoted hetjob is a value", "#!/bin/sh\n#SBATCH -J 'hetjob'\n", []string{"-J", "hetjob"}, []int{2, 2}, false, ""},
		{"empty word ends the line", "#!/bin/sh\n#SBATCH -J \"\" -t 5\n", []string{"-J"}, []int{2}, false, ""},
		{"CRLF lines", "#!/bin/sh\r\n#SBATCH -t 5\r\n", []string{"-t", "5"}, []int{2, 2}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ScanDirectives("q.sh", []byte(tc.script))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(d.Words, tc.words) || !reflect.DeepEqual(d.Lines, tc.lines) || d.Het != tc.het {
				t.Errorf("got %q %v het=%v, want %q %v het=%v", d.Words, d.Lines, d.Het, tc.words, tc.lines, tc.het)
			}
		})
	}
}

// Precedence as sbatch: script < SBATCH_* < command line.
func TestPrecedence(t *testing.T) {
	req, err := ParseCLI([]string{"-t", "30", "job.sh"})
	if err != nil {
		t.Fatal(err)
	}
	if err := req.AddScript("job.sh", []byte("#!/bin/sh\n#SBATCH -t 10 -p script -J fromscript --glean=mode=scavenger\n#SBATCH --mem=1G\n")); err != nil {
		t.Fatal(err)
	}
	req.AddEnv([]string{"SBATCH_TIMELIMIT=20", "SBATCH_PARTITION=env", "SBATCH_HOLD=1", "SBATCH_OVERCOMMIT=no", "SBATCH_REQUEUE=", "SBATCH_WAIT=0", "HOME=/x"})
	for _, tc := range []struct{ opt, want, layer string }{
		{"time", "30", "command line"},
		{"partition", "env", "environment"},
		{"job-name", "fromscript", "script"},
		{"mem", "1G", "script"},
		{"glean", "mode=scavenger", "script"},
		{"requeue", "", "environment"}, // empty enables a flag
	} {
		s, ok := req.Get(tc.opt)
		if !ok || s.Value != tc.want || s.Layer.String() != tc.layer {
			t.Errorf("%s = %q from %v (set %v), want %q from %s", tc.opt, s.Value, s.Layer, ok, tc.want, tc.layer)
		}
	}
	for _, off := range []string{"overcommit", "wait", "hold"} { // "no", "0" and unknown variables set nothing
		if s, ok := req.Get(off); ok {
			t.Errorf("%s set by %s", off, s.Name())
		}
	}
}

func TestMentionsGlean(t *testing.T) {
	if MentionsGlean([]string{"-t", "5", "x.sh"}, []string{"HOME=/"}, []byte("#!/bin/sh\n#SBATCH -t 5\necho glean\n")) {
		t.Error("a mention after the directive block counted")
	}
	for _, tc := range []struct {
		args, env []string
		script    string
	}{
		{[]string{"--glean", "x.sh"}, nil, ""},
		{[]string{"--gle=mode=fair"}, nil, ""},
		{nil, []string{"SBATCH_GLEAN=mode=fair"}, ""},
		{nil, nil, "#!/bin/sh\n#SBATCH --glean\n"},
		{[]string{"--container-image=img", "--glean", "x.sh"}, nil, ""},           // an option glean's table lacks, with its value
		{[]string{"-Ht", "5", "--gl", "x.sh"}, nil, ""},                           // a short option's value in the next word
		{nil, nil, "#!/bin/sh\n#SBATCH --container-image=img\n#SBATCH --glean\n"}, // ... in a directive
		{nil, nil, "#!/bin/sh\n#SBATCH -t 5\n#SBATCH hetjob\n#SBATCH --glean\n"},  // a later het component's
	} {
		var script []byte
		if tc.script != "" {
			script = []byte(tc.script)
		}
		if !MentionsGlean(tc.args, tc.env, script) {
			t.Errorf("no mention found in %v %v %q", tc.args, tc.env, tc.script)
		}
	}
	// Only where sbatch reads options: never a script argument, an
	// option's value, a comment or the script's body, nor past a word that
	// may be the operand.
	for _, tc := range []struct {
		args   []string
		script string
	}{
		{[]string{"x.sh", "--glean"}, ""},
		{[]string{"--container-image=img", "x.sh", "--glean"}, ""},
		{[]string{"-J", "--glean", "x.sh"}, ""},
		{[]string{"-t5", "--", "--glean"}, ""},
		{[]string{"--container-image", "img", "--glean", "x.sh"}, ""}, // img may be the operand: glean cannot tell
		{nil, "#!/bin/sh\n# run with --glean some day\n#SBATCH -t 5\ntrue\n"},
		{nil, "#!/bin/sh\n#SBATCH -t 5 # --glean later\ntrue\n"},
		{nil, "#!/bin/sh\n#SBATCH --comment=--glean\ntrue\n"},
		{nil, "echo --glean\n#SBATCH --glean\n"},
		{nil, "#!/bin/sh\n#SBATCH x.sh --glean\n"},
		{nil, "#!/bin/sh\n#SBATCH --container-image img --glean\n"},
	} {
		var script []byte
		if tc.script != "" {
			script = []byte(tc.script)
		}
		if MentionsGlean(tc.args, nil, script) {
			t.Errorf("a mention found in %q %q", tc.args, tc.script)
		}
	}
}

func TestParseArray(t *testing.T) {
	for _, tc := range []struct {
		spec, want string
		count      int
		err        bool
	}{
		{"0-149", "0-149", 150, false},
		{"1,3,5-11:2", "1,3,5-11:2", 6, false},
		{"0-15%4", "0-15%4", 16, false},
		{"1-5:2%3", "1-5:2%3", 3, false},
		{"1,1,2", "1-2", 2, false},
		{",1", "1", 1, false},
		{"1,", "1", 1, false},
		{" 1", "1", 1, false},
		{"+1", "1", 1, false},
		{"01-03", "1-3", 3, false},
		{"0-3%0", "0-3", 4, false},
		{"0-3%", "0-3", 4, false},
		{"0-9,5-20", "0-20", 21, false},
		{"0-10:5,1-3", "0-3,5,10", 6, false},
		{"1,3", "1,3", 2, false},
		{"0-9999", "0-9999", 10000, false},
		{"0-4000000", "0-4000000", 4000001, false},
		{"5-1", "", 0, true},
		{"1-5:0", "", 0, true},
		{"0x10", "", 0, true},
		{"1-3:-1", "", 0, true},
		{"7:2", "", 0, true},
		{"", "", 0, true},
		{",", "", 0, true},
		{"0-4000001", "", 0, true},
		{"-1", "", 0, true},
		{"1-2%x", "", 0, true},
	} {
		a, err := ParseArray(tc.spec)
		if tc.err {
			if err == nil {
				t.Errorf("ParseArray(%q) = %v, want an error", tc.spec, a)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseArray(%q): %v", tc.spec, err)
			continue
		}
		if got := a.String(); got != tc.want || a.Count() != tc.count {
			t.Errorf("ParseArray(%q) = %q (%d), want %q (%d)", tc.spec, got, a.Count(), tc.want, tc.count)
		}
		if err := a.Validate(); err != nil {
			t.Errorf("ParseArray(%q) gave an invalid array: %v", tc.spec, err)
		}
	}
}

func TestParseGlean(t *testing.T) {
	s, err := ParseGlean("mode=scavenger,dir=data,batch=5,checkpoint=yes,pty=no,deadline=now+2hours,budget=12.5,profile=calib-v2")
	if err != nil {
		t.Fatal(err)
	}
	want := Spec{Mode: "scavenger", Dir: "data", Batch: 5, Checkpoint: "yes", PTY: "no", Deadline: "now+2hours", Budget: 12.5, Profile: "calib-v2"}
	if s != want {
		t.Fatalf("got %+v, want %+v", s, want)
	}
	if s, err := ParseGlean(""); err != nil || s != (Spec{}) {
		t.Fatalf("plain --glean: %+v %v", s, err)
	}
	for _, tc := range []struct{ v, msg string }{
		{"mode=fast", `bad value "fast" for key mode`},
		{"colour=red", `unknown key "colour"; allowed keys: mode, dir, batch`},
		{"mode", `"mode" is not key=value`},
		{"mode=fair,mode=scavenger", `key "mode" given twice`},
		{"checkpoint=maybe", `bad value "maybe" for key checkpoint`},
		{"batch=0,dir=x", `bad value "0" for key batch`},
		{"batch=4", "key batch needs dir="},
		{"budget=-1", `bad value "-1" for key budget`},
		{"profile=a/b", `bad value "a/b" for key profile`},
		{"deadline=tomorrow;rm", `bad value "tomorrow;rm" for key deadline`},
		{"dir=a b", `bad value "a b" for key dir`},
		{"mode=", "key mode has an empty value"},
		{strings.Repeat("x", MaxGleanValue+1), "value longer than"},
	} {
		_, err := ParseGlean(tc.v)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("ParseGlean(%q) = %v, want %q", tc.v, err, tc.msg)
		}
	}
}
