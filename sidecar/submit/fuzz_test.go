package submit

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/config"
	"github.com/glean-hpc/glean/sidecar/spool"
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

// FuzzBuildEntry runs a whole submission (command line, script
// directives, SBATCH_* environment) through the wrapper's checks: what the
// wrapper writes, the daemon's Validate accepts and DecodeEntry reads back
// unchanged, and the captured environment is clean KEY=VALUE records;
// everything else is a refusal or an option error, never a panic.
func FuzzBuildEntry(f *testing.F) {
	f.Add("--glean\x00--array=0-9\x00job.sh", []byte("#!/bin/sh\n#SBATCH -t 10 -c 2 --mem=2G\necho\n"), "HOME=/h\x00SLURM_X=1")
	f.Add("--glean=mode=fair\x00-a\x001,3,5-11:2%2\x00-o\x00../../etc/%u\x00job.sh", []byte("#!/bin/sh\n#SBATCH --mem-per-cpu=1T -c 64\n"), "SBATCH_TIMELIMIT=UNLIMITED")
	f.Add("job.sh", []byte("#!/bin/sh\n#SBATCH --glean=mode=scavenger\n#SBATCH --export=NONE,A=1,=x\n"), "A=\x00=B\x00SBATCH_GLEAN=mode=fair")
	f.Add("--glean\x00--uid=0\x00job.sh", []byte("#!/bin/sh\n"), "")
	f.Add("--glean\x00-t\x0099999999999\x00--mem=1099511627776\x00job.sh", []byte("#!/bin/sh\n"), "")
	cfg := config.Default()
	cfg.Limits.MaxTasksPerJob = 1 << 20
	f.Fuzz(func(t *testing.T, args string, script []byte, env string) {
		req, err := ParseCLI(strings.Split(args, "\x00"))
		if err != nil {
			return
		}
		if req.AddScript("job.sh", script) != nil {
			return
		}
		envv := strings.Split(env, "\x00")
		req.AddEnv(envv)
		b, err := BuildEntry(req, Input{Config: cfg, Env: envv, Cwd: "/nonexistent/u", User: "u", Now: time.Unix(1_800_000_000, 0),
			Script: script, ScriptName: "/nonexistent/u/job.sh"})
		if err != nil {
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		e := b.Entry
		e.ID, e.Nonce, e.Anchor = spool.NewID(time.Unix(1_800_000_000, 0)), spool.NewNonce(), "42"
		if e.Mode == ModeFair {
			e.Shadow = "43"
		}
		if err := e.Validate(spool.Limits{MaxTasks: cfg.Limits.MaxTasksPerJob}); err != nil {
			t.Fatalf("the wrapper built an entry the daemon rejects: %v\n%+v", err, e)
		}
		data, err := e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		e2, err := spool.DecodeEntry(bytes.NewReader(data), 1<<24)
		if err != nil || !reflect.DeepEqual(e, e2) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, e, e2)
		}
		for _, kv := range bytes.Split(bytes.TrimSuffix(b.Env, []byte{0}), []byte{0}) {
			if len(b.Env) == 0 {
				break
			}
			if k, _, ok := bytes.Cut(kv, []byte("=")); !ok || len(k) == 0 {
				t.Fatalf("captured variable %q", kv)
			}
		}
	})
}
