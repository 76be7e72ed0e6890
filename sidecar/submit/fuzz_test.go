package submit

import (
	"strings"
	"testing"
)

// The option, directive, array and --glean parsers read user input from
// the command line, scripts and the environment: fuzz them. Seed corpora
// live in testdata/fuzz/<FuzzName>/.

func FuzzParseCLI(f *testing.F) {
	for _, s := range []string{"--time=5\x00job.sh", "-HvQt5\x00x", "--par\x00x", "--glean=mode=fair\x00--array=0-3%2\x00x.sh\x00-J", "--\x00-x", "-k\x00-koff", ":\x00-t\x001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		args := strings.Split(in, "\x00")
		req, err := ParseCLI(args)
		if err != nil {
			if _, ok := err.(*OptError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		for _, s := range req.CLI {
			if byLong[s.Opt.Long] != s.Opt {
				t.Fatalf("setting for unknown option %q", s.Opt.Long)
			}
			if s.Opt.Arg == NoArg && s.HasValue {
				t.Fatalf("flag --%s got a value", s.Opt.Long)
			}
			if s.Opt.Arg == RequiredArg && !s.HasValue {
				t.Fatalf("--%s lost its value", s.Opt.Long)
			}
		}
		if len(req.Operands) > len(args) {
			t.Fatal("more operands than words")
		}
	})
}

func FuzzScanDirectives(f *testing.F) {
	for _, s := range []string{
		"#!/bin/sh\n#SBATCH -J one\n#SBATCH --time=5 -c 2\necho\n",
		"#!/bin/sh\n#SBATCH -J \"a b\" # c\n#SBATCH --comment='x#y' -t\\\"3\n",
		"#!/bin/sh\n#SBATCH -J \"unterminated\n", "#SBATCH : x\n", "#SLURM -t 7\n#SBATCH hetjob\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		d, err := ScanDirectives("f.sh", script)
		if err != nil {
			return
		}
		if d.End < 0 || d.End > len(script) || len(d.Words) != len(d.Lines) {
			t.Fatalf("End %d of %d, %d words %d lines", d.End, len(script), len(d.Words), len(d.Lines))
		}
		for _, w := range d.Words {
			if w == "" || strings.ContainsAny(w, "\n") {
				t.Fatalf("bad word %q", w)
			}
		}
		req := &Request{}
		_ = req.AddScript("f.sh", script) // must not panic
	})
}

func FuzzParseArray(f *testing.F) {
	for _, s := range []string{"0-149", "1,3,5-11:2", "0-15%4", "1-5:2%3", ",1", "+01-03", "0-10:5,1-3", "0-4000000", "5-1", "7:2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		a, err := ParseArray(spec)
		if err != nil {
			return
		}
		if err := a.Validate(); err != nil {
			t.Fatalf("ParseArray(%q) = %v: invalid: %v", spec, a, err)
		}
		if a.Count() < 1 {
			t.Fatalf("ParseArray(%q): no indices", spec)
		}
		b, err := ParseArray(a.String())
		if err != nil || b.String() != a.String() || b.Count() != a.Count() {
			t.Fatalf("round trip of %q: %q -> %q (%v)", spec, a.String(), b.String(), err)
		}
	})
}

func FuzzParseGlean(f *testing.F) {
	for _, s := range []string{"", "mode=fair", "mode=scavenger,dir=data,batch=5,checkpoint=yes,pty=no,deadline=now+2hours,budget=12.5,profile=p", "mode", "x=y", "batch=4", "deadline=2026-12-01T18:00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		s, err := ParseGlean(v)
		if err != nil {
			if _, ok := err.(*GleanError); !ok {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		if s.Batch != 0 && s.Dir == "" {
			t.Fatal("batch without dir accepted")
		}
		switch s.Mode {
		case "", ModeFair, ModeScavenger, ModeThesis:
		default:
			t.Fatalf("mode %q accepted", s.Mode)
		}
	})
}
