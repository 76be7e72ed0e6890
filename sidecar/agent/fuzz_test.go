package agent

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// The agent reads what its user wrote: the captured environment (the
// wrapper writes it, but the user owns the file and may rewrite it),
// -o/-e/-i patterns, and the --job argument. Seed corpora live in
// testdata/fuzz/<FuzzName>/.

// FuzzParseEnv: every variable handed on is KEY=VALUE with a non-empty
// key and no NUL, and each one is in the file as written.
func FuzzParseEnv(f *testing.F) {
	for _, s := range []string{"A=1\x00B=2\x00", "", "\x00\x00", "=x\x00A\x00B==\x00", "PATH=/bin\x00LD_PRELOAD=/tmp/x.so", "A=1\x00A=2\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, kv := range ParseEnv(data) {
			k, _, ok := strings.Cut(kv, "=")
			if !ok || k == "" || strings.ContainsRune(kv, 0) {
				t.Fatalf("bad variable %q", kv)
			}
			if !bytes.Contains(data, []byte(kv)) {
				t.Fatalf("%q is not in the file", kv)
			}
		}
	})
}

// FuzzExpandPattern: a pattern expands without panicking, bounded in
// size (widths are capped), and a pattern without '%' or '\' is itself.
func FuzzExpandPattern(f *testing.F) {
	for _, s := range []string{"slurm-%A_%a.out", "%10a", "%%", "%", "%99999999999999999999a", `\%a`, "../../etc/%u/%x", "%N.%j.%J.%n.%t.%s.%q"} {
		f.Add(s)
	}
	v := PatternVars{ArrayJob: "123", Task: "7", Job: "456", Name: "job", User: "alice", Node: "n1"}
	f.Fuzz(func(t *testing.T, p string) {
		out := ExpandPattern(p, v)
		if !strings.ContainsAny(p, `%\`) && out != p {
			t.Fatalf("%q expanded to %q", p, out)
		}
		if len(out) > len(p)*16+16 {
			t.Fatalf("%q (%d bytes) expanded to %d bytes", p, len(p), len(out))
		}
	})
}

// FuzzParseJobArg: --job is <uid>.<entry id> and nothing else.
func FuzzParseJobArg(f *testing.F) {
	for _, s := range []string{"1000.019a2b3c4d5e-0123abcd", "0.x", "-1.019a2b3c4d5e-0123abcd", "01000.019a2b3c4d5e-0123abcd", "1000./../../etc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		uid, id, err := ParseJobArg(s)
		if err != nil {
			return
		}
		if uid < 0 || !spool.ValidID(id) || spool.RecordName(uid, id) != s {
			t.Fatalf("%q parsed as %d %q", s, uid, id)
		}
	})
}

// FuzzParseMarker: the checkpoint marker <root>/<anchor>/.glean-job is the
// user's file, read by Sweep (which may then remove that directory). A
// marker is taken only if it is of this spool and names a record of this
// uid, in the record name's exact form; a marker the agent writes is read
// back as its own record.
func FuzzParseMarker(f *testing.F) {
	const sp, uid = "/var/spool/glean", 1000
	for _, s := range []string{
		`{"spool":"/var/spool/glean","record":"1000.0190abcdef01-abcd1234"}`,
		`{"spool":"/var/spool/glean","record":"1001.0190abcdef01-abcd1234"}`,
		`{"spool":"/var/spool/glean","record":"1000.../../etc"}`,
		`{"spool":"/elsewhere","record":"1000.0190abcdef01-abcd1234"}`,
		`{"spool":"/var/spool/glean","record":"01000.0190abcdef01-abcd1234","x":1}`,
		``, `{}`, `null`, `[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		name, ok := parseMarker(data, sp, uid)
		if !ok {
			if name != "" {
				t.Fatalf("refused, but named %q", name)
			}
			return
		}
		u, id, err := ParseJobArg(name)
		if err != nil || u != uid || spool.RecordName(u, id) != name || strings.ContainsAny(name, "/\x00") {
			t.Fatalf("marker %q taken as record %q (uid %d, %v)", data, name, u, err)
		}
		back, _ := json.Marshal(marker{Spool: sp, Record: name})
		if again, ok := parseMarker(back, sp, uid); !ok || again != name {
			t.Fatalf("the agent's own marker for %q reads back as %q %v", name, again, ok)
		}
	})
}
