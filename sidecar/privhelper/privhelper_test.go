package privhelper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
	"github.com/glean-hpc/glean/sidecar/slurm"
	"github.com/glean-hpc/glean/sidecar/spool"
)

const (
	tok  = "0123456789abcdef0123456789abcdef"
	tok2 = "fedcba9876543210fedcba9876543210"
)

func TestDecodeRequest(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       Request
		err        string
	}{
		{"hold", `{"op":"hold","job":"101"}`, Request{Op: OpHold, Job: "101"}, ""},
		{"release", `{"op":"release","job":"7"}`, Request{Op: OpRelease, Job: "7"}, ""},
		{"cancel", `{"job":"55","op":"cancel"}`, Request{Op: OpCancel, Job: "55"}, ""},
		{"start-shadow", `{"op":"start-shadow","job":"56"}`, Request{Op: OpStartShadow, Job: "56"}, ""},
		{"unknown op", `{"op":"submit","job":"101"}`, Request{}, `unknown op "submit"`},
		{"free-form command", `{"op":"scancel -u alice","job":"1"}`, Request{}, "unknown op"},
		{"no op", `{"job":"101"}`, Request{}, `unknown op ""`},
		{"unknown field", `{"op":"hold","job":"101","user":"alice"}`, Request{}, `unknown field "user"`},
		{"injection in the id", `{"op":"hold","job":"101 --all"}`, Request{}, "bad job id"},
		{"array element", `{"op":"cancel","job":"101_3"}`, Request{}, "want a whole job id"},
		{"negative id", `{"op":"cancel","job":"-1"}`, Request{}, "bad job id"},
		{"number, not string", `{"op":"cancel","job":101}`, Request{}, "malformed request"},
		{"two objects", `{"op":"hold","job":"1"}{"op":"cancel","job":"2"}`, Request{}, "data after the JSON object"},
		{"not JSON", `hold 101`, Request{}, "malformed request"},
		{"array", `[]`, Request{}, "malformed request"},
		{"submit-pilots", `{"op":"submit-pilots","record":"1500.0190aaaaaaaa-12345678","tokens":["0123456789abcdef0123456789abcdef","fedcba9876543210fedcba9876543210"]}`,
			Request{Op: OpSubmitPilots, Record: "1500.0190aaaaaaaa-12345678", Tokens: []string{tok, tok2}}, ""},
		{"submit-pilots without a token", `{"op":"submit-pilots","record":"1500.0190aaaaaaaa-12345678"}`, Request{}, "takes 1 to 64 tokens"},
		{"submit-pilots with a token twice", `{"op":"submit-pilots","record":"1500.0190aaaaaaaa-12345678","tokens":["0123456789abcdef0123456789abcdef","0123456789abcdef0123456789abcdef"]}`, Request{}, "given twice"},
		{"submit-pilots with a comment injection", `{"op":"submit-pilots","record":"1500.0190aaaaaaaa-12345678","tokens":["x --uid=0"]}`, Request{}, "bad token"},
		{"submit-pilots with a job id", `{"op":"submit-pilots","job":"5","record":"1500.0190aaaaaaaa-12345678","tokens":["0123456789abcdef0123456789abcdef"]}`, Request{}, "takes no job id"},
		{"submit-pilots with a path", `{"op":"submit-pilots","record":"../../etc"}`, Request{}, "bad record name"},
		{"submit-pilots with a node", `{"op":"submit-pilots","record":"1500.0190aaaaaaaa-12345678","node":"--uid=0","tokens":["0123456789abcdef0123456789abcdef"]}`, Request{}, `unknown field "node"`},
		{"submit-pilots with a time limit", `{"op":"submit-pilots","record":"1500.0190aaaaaaaa-12345678","minutes":5,"tokens":["0123456789abcdef0123456789abcdef"]}`, Request{}, `unknown field "minutes"`},
		{"signal-pilot", `{"op":"signal-pilot","record":"1500.0190aaaaaaaa-12345678","job":"77"}`, Request{Op: OpSignalPilot, Record: "1500.0190aaaaaaaa-12345678", Job: "77"}, ""},
		{"cancel-pending-pilot", `{"op":"cancel-pending-pilot","record":"1500.0190aaaaaaaa-12345678","job":"77"}`, Request{Op: OpCancelPendingPilot, Record: "1500.0190aaaaaaaa-12345678", Job: "77"}, ""},
		{"signal-pilot without a record", `{"op":"signal-pilot","job":"77"}`, Request{}, "bad record name"},
		{"cancel-pilot with tokens", `{"op":"cancel-pilot","record":"1500.0190aaaaaaaa-12345678","job":"77","tokens":["0123456789abcdef0123456789abcdef"]}`, Request{}, "takes no tokens"},
		{"cancel-pilot", `{"op":"cancel-pilot","record":"1500.0190aaaaaaaa-12345678","job":"77"}`, Request{Op: OpCancelPilot, Record: "1500.0190aaaaaaaa-12345678", Job: "77"}, ""},
		{"cancel with a record", `{"op":"cancel","record":"1500.0190aaaaaaaa-12345678","job":"77"}`, Request{}, "takes no record"},
		{"hold with tokens", `{"op":"hold","job":"77","tokens":[]}`, Request{}, "takes no tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeRequest([]byte(tc.line))
			if tc.err == "" {
				if err != nil || !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			if err == nil || !IsRefusal(err) || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want a one-line refusal containing %q", err, tc.err)
			}
		})
	}
}

// FuzzDecodeRequest: what the helper accepts is one of its narrow
// requests, exactly; everything else is a one-line refusal. Seeds (every
// op, good and bad) are in testdata/fuzz/FuzzDecodeRequest/.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(`{"op":"hold","job":"101"}`)
	f.Add(`{"op":"cancel","job":"1_2","x":1}`)
	f.Fuzz(func(t *testing.T, line string) {
		req, err := DecodeRequest([]byte(line))
		if err != nil {
			if !IsRefusal(err) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("not a one-line refusal: %v", err)
			}
			return
		}
		if !ops[req.Op] {
			t.Fatalf("accepted op %q", req.Op)
		}
		switch req.Op {
		case OpSubmitPilots:
			if req.Job != "" || !validRecordName(req.Record) || len(req.Tokens) == 0 || len(req.Tokens) > MaxPilotsPerRequest {
				t.Fatalf("accepted %+v", req)
			}
			for _, tk := range req.Tokens {
				if !isHex32(tk) {
					t.Fatalf("accepted %+v", req)
				}
			}
		default:
			if !slurm.ValidJobID(req.Job) || strings.Contains(req.Job, "_") || req.Tokens != nil {
				t.Fatalf("accepted %+v", req)
			}
			if pilotOp(req.Op) != (req.Record != "") || (req.Record != "" && !validRecordName(req.Record)) {
				t.Fatalf("accepted %+v", req)
			}
		}
	})
}

// fakeSlurm answers squeue from jobs and records every other command.
type fakeSlurm struct {
	mu       sync.Mutex
	jobs     []qjob
	fail     error  // squeue fails
	failWith string // an sbatch whose command line holds this fails
	next     int    // sbatch ids: 4242, 4243, ...
	calls    []string
}

func (f *fakeSlurm) Run(_ context.Context, argv []string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if argv[0] != "squeue" {
		f.calls = append(f.calls, strings.Join(argv, " "))
		if argv[0] == "sbatch" {
			if f.failWith != "" && strings.Contains(strings.Join(argv, " "), f.failWith) {
				return nil, errors.New("sbatch: error: Batch job submission failed: Socket timed out")
			}
			f.next++
			return []byte(fmt.Sprintf("%d\n", 4241+f.next)), nil
		}
		return nil, nil
	}
	if f.fail != nil {
		return nil, f.fail
	}
	last := argv[len(argv)-1]
	seal := strings.TrimSuffix(last[strings.Index(last, sealMark)+1:], "\x1e")
	var b strings.Builder
	for _, j := range f.jobs {
		arr := j.ArrayID
		if arr == "" {
			arr = "N/A"
		}
		b.WriteString(strings.Join([]string{j.ID, arr, j.State, j.Partition, j.User, j.Comment}, fieldSep) + sealMark + seal + recEnd)
	}
	return []byte(b.String()), nil
}

type fixture struct {
	sp    *spool.Spool
	rs    *spool.Records
	slurm *fakeSlurm
	h     *Handler
}

const (
	alice    = "alice"
	aliceUID = 1500
)

func newFixture(t *testing.T) *fixture {
	t.Helper()
	sp := &spool.Spool{Dir: t.TempDir()}
	rs, err := sp.Init(-1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close() })
	fs := &fakeSlurm{}
	users := map[int]string{aliceUID: alice, 0: "root", 1600: "bob"}
	return &fixture{sp: sp, rs: rs, slurm: fs, h: &Handler{
		Spool: sp, Slurm: &slurm.Client{R: fs}, AnchorPartition: "glean", DaemonUID: os.Getuid(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Pilots: PilotParams{Partition: "pilot", Script: "/opt/glean/pilot.sh", Agent: "/opt/glean/glean-agent",
			Config: "/etc/glean/glean.toml", Grace: time.Minute, MinUID: 1000,
			Group: func(uid int) (int, error) { return uid, nil }},
		Users: func(uid int) (string, error) {
			if u, ok := users[uid]; ok {
				return u, nil
			}
			return "", fmt.Errorf("no uid %d", uid)
		},
	}}
}

// intents adds pilots to a record and writes it.
func (fx *fixture) intents(t *testing.T, r *spool.Record, ps ...spool.PilotJob) {
	t.Helper()
	r.PilotJobs = append(r.PilotJobs, ps...)
	if err := fx.rs.Put(r); err != nil {
		t.Fatal(err)
	}
}

// record writes a record of uid's entry with anchor and shadow, and
// returns it with the Slurm jobs that match it.
func (fx *fixture) record(t *testing.T, uid int, user, state, anchor, shadow string) (*spool.Record, []qjob) {
	t.Helper()
	e := &spool.Entry{ID: spool.NewID(time.Now()), Nonce: spool.NewNonce(), Anchor: anchor, Shadow: shadow}
	r := &spool.Record{ID: e.ID, UID: uid, User: user, Anchor: anchor, Shadow: shadow, State: state, Entry: e}
	if err := fx.rs.Put(r); err != nil {
		t.Fatal(err)
	}
	jobs := []qjob{{ID: anchor, State: "PENDING", Partition: "glean", User: user, Comment: spool.Comment(e.ID, e.Nonce)}}
	if shadow != "" {
		jobs = append(jobs,
			qjob{ID: shadow, ArrayID: shadow, State: "PENDING", Partition: "batch", User: user, Comment: spool.ShadowComment(e.ID, e.Nonce)},
			qjob{ID: "999", ArrayID: shadow, State: "RUNNING", Partition: "batch", User: user, Comment: spool.ShadowComment(e.ID, e.Nonce)})
	}
	return r, jobs
}

func TestHandleChecks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, fx *fixture) Request
		refuse string // "" = allowed
		call   string // the Slurm command run when allowed
	}{
		{"hold an accepting anchor", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, aliceUID, alice, spool.StateAccepting, "101", "102")
			fx.slurm.jobs = jobs
			return Request{Op: OpHold, Job: "101"}
		}, "", "scontrol hold 101"},
		{"hold the shadow array (an element running)", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, aliceUID, alice, spool.StateAccepting, "101", "102")
			fx.slurm.jobs = jobs
			return Request{Op: OpHold, Job: "102"}
		}, "", "scontrol hold 102"},
		{"cancel a queued job's shadow", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, aliceUID, alice, spool.StateQueued, "101", "102")
			fx.slurm.jobs = jobs
			return Request{Op: OpCancel, Job: "102"}
		}, "", "scancel 102"},
		{"cancel a rejected job's anchor", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, aliceUID, alice, spool.StateRejected, "101", "")
			fx.slurm.jobs = jobs
			return Request{Op: OpCancel, Job: "101"}
		}, "", "scancel 101"},
		{"release a running job's anchor", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, aliceUID, alice, spool.StateRunning, "101", "")
			fx.slurm.jobs = jobs
			return Request{Op: OpRelease, Job: "101"}
		}, "", "scontrol release 101"},
		{"not recorded", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, aliceUID, alice, spool.StateQueued, "101", "")
			fx.slurm.jobs = append(jobs, qjob{ID: "300", State: "PENDING", Partition: "glean", User: alice, Comment: jobs[0].Comment})
			return Request{Op: OpHold, Job: "300"}
		}, "job 300 is not a job glean recorded", ""},
		{"another user's job imitating the anchor", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, aliceUID, alice, spool.StateAccepting, "101", "")
			jobs[0].User = "bob" // the id is bob's job now, with alice's comment copied
			fx.slurm.jobs = jobs
			return Request{Op: OpHold, Job: "101"}
		}, "job 101 belongs to bob, not to alice", ""},
		{"the comment lacks the nonce", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, aliceUID, alice, spool.StateAccepting, "101", "")
			jobs[0].Comment = "glean:x:y"
			fx.slurm.jobs = jobs
			return Request{Op: OpHold, Job: "101"}
		}, "does not carry the nonce", ""},
		{"a shadow comment on the anchor", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, aliceUID, alice, spool.StateAccepting, "101", "102")
			jobs[0].Comment = jobs[1].Comment
			fx.slurm.jobs = jobs
			return Request{Op: OpHold, Job: "101"}
		}, "does not carry the nonce", ""},
		{"an array element of someone else", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, aliceUID, alice, spool.StateQueued, "101", "102")
			jobs[2].User = "bob"
			fx.slurm.jobs = jobs
			return Request{Op: OpCancel, Job: "102"}
		}, "belongs to bob", ""},
		{"anchor outside the anchor partition", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, aliceUID, alice, spool.StateAccepting, "101", "")
			jobs[0].Partition = "batch"
			fx.slurm.jobs = jobs
			return Request{Op: OpHold, Job: "101"}
		}, "not the anchor partition glean", ""},
		{"gone from Slurm", func(t *testing.T, fx *fixture) Request {
			fx.record(t, aliceUID, alice, spool.StateQueued, "101", "")
			return Request{Op: OpCancel, Job: "101"}
		}, "job 101 is not known to Slurm", ""},
		{"hold a rejected job", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, aliceUID, alice, spool.StateRejected, "101", "")
			fx.slurm.jobs = jobs
			return Request{Op: OpHold, Job: "101"}
		}, "is rejected; glean holds only", ""},
		{"root's job", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, 0, "root", spool.StateAccepting, "101", "")
			fx.slurm.jobs = jobs
			return Request{Op: OpHold, Job: "101"}
		}, "does not act on root's jobs", ""},
		{"the record's user is not its uid", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, 1600, alice, spool.StateAccepting, "101", "")
			fx.slurm.jobs = jobs
			return Request{Op: OpHold, Job: "101"}
		}, "names user alice, which is not uid 1600", ""},
		{"a record without its entry", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, aliceUID, alice, spool.StateRejected, "101", "")
			r.Entry = nil
			fx.rs.Put(r)
			fx.slurm.jobs = jobs
			return Request{Op: OpCancel, Job: "101"}
		}, "holds no entry nonce", ""},
		{"a hostile record and a good one for the same job", func(t *testing.T, fx *fixture) Request {
			fx.record(t, 1600, "bob", spool.StateRejected, "101", "")
			_, jobs := fx.record(t, aliceUID, alice, spool.StateQueued, "101", "")
			fx.slurm.jobs = jobs
			return Request{Op: OpCancel, Job: "101"}
		}, "", "scancel 101"},
		{"a symlinked record", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, aliceUID, alice, spool.StateAccepting, "101", "")
			dir := filepath.Join(fx.sp.Dir, spool.JobsDir)
			os.Rename(filepath.Join(dir, r.DirName()), filepath.Join(dir, "elsewhere"))
			os.Mkdir(filepath.Join(dir, r.DirName()), 0o755)
			os.Symlink("../elsewhere/job.json", filepath.Join(dir, r.DirName(), spool.RecordFile))
			os.Rename(filepath.Join(dir, "elsewhere", spool.RecordFile), filepath.Join(dir, "elsewhere", "x"))
			os.Symlink("x", filepath.Join(dir, "elsewhere", spool.RecordFile))
			fx.slurm.jobs = jobs
			return Request{Op: OpHold, Job: "101"}
		}, "not a job glean recorded", ""},
		{"a hardlinked record", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, aliceUID, alice, spool.StateAccepting, "101", "")
			dir := filepath.Join(fx.sp.Dir, spool.JobsDir)
			os.Link(filepath.Join(dir, r.DirName(), spool.RecordFile), filepath.Join(dir, "linked"))
			fx.slurm.jobs = jobs
			return Request{Op: OpHold, Job: "101"}
		}, "not a job glean recorded", ""},
		{"a FIFO for a record", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, aliceUID, alice, spool.StateAccepting, "101", "")
			p := filepath.Join(fx.sp.Dir, spool.JobsDir, r.DirName(), spool.RecordFile)
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
			fx.slurm.jobs = jobs
			return Request{Op: OpHold, Job: "101"}
		}, "not a job glean recorded", ""},
		{"submit a queued job's pilots", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, aliceUID, alice, spool.StateQueued, "101", "")
			fx.intents(t, r, spool.PilotJob{Token: tok, Node: "c3", TimeLimit: 17 * time.Minute},
				spool.PilotJob{Token: tok2, TimeLimit: cluster.Unlimited})
			fx.slurm.jobs = jobs
			return Request{Op: OpSubmitPilots, Record: r.DirName(), Tokens: []string{tok, tok2}}
		}, "", "sbatch --parsable --uid=1500 --gid=1500 --partition=pilot --nodes=1 --exclusive --export=NONE --no-requeue --signal=B:TERM@60 --time=17 --job-name=glean-pilot --comment=glean-pilot:0123456789abcdef0123456789abcdef --output=/dev/null --error=/dev/null --chdir=/tmp --nodelist=c3 /opt/glean/pilot.sh /opt/glean/glean-agent pilot --job RECORD --config /etc/glean/glean.toml," +
			"sbatch --parsable --uid=1500 --gid=1500 --partition=pilot --nodes=1 --exclusive --export=NONE --no-requeue --signal=B:TERM@60 --time=UNLIMITED --job-name=glean-pilot --comment=glean-pilot:fedcba9876543210fedcba9876543210 --output=/dev/null --error=/dev/null --chdir=/tmp /opt/glean/pilot.sh /opt/glean/glean-agent pilot --job RECORD --config /etc/glean/glean.toml"},
		{"submit a pilot the record does not hold", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, aliceUID, alice, spool.StateQueued, "101", "")
			fx.intents(t, r, spool.PilotJob{Token: tok, TimeLimit: time.Minute})
			fx.slurm.jobs = jobs
			return Request{Op: OpSubmitPilots, Record: r.DirName(), Tokens: []string{tok, tok2}}
		}, "holds no pilot with token " + tok2, ""},
		{"submit a pilot twice", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, aliceUID, alice, spool.StateQueued, "101", "")
			fx.intents(t, r, spool.PilotJob{ID: "700", Token: tok, TimeLimit: time.Minute})
			fx.slurm.jobs = jobs
			return Request{Op: OpSubmitPilots, Record: r.DirName(), Tokens: []string{tok}}
		}, "was submitted already (job 700)", ""},
		{"submit a pilot whose recorded node is an option", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, aliceUID, alice, spool.StateQueued, "101", "")
			fx.intents(t, r, spool.PilotJob{Token: tok, Node: "--uid=0", TimeLimit: time.Minute})
			fx.slurm.jobs = jobs
			return Request{Op: OpSubmitPilots, Record: r.DirName(), Tokens: []string{tok}}
		}, "bad node name", ""},
		{"submit a pilot for an ended job", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, aliceUID, alice, spool.StateDone, "101", "")
			fx.intents(t, r, spool.PilotJob{Token: tok, TimeLimit: time.Minute})
			fx.slurm.jobs = jobs
			return Request{Op: OpSubmitPilots, Record: r.DirName(), Tokens: []string{tok}}
		}, "pilots are for queued or running jobs", ""},
		{"submit a pilot for a system account", func(t *testing.T, fx *fixture) Request {
			fx.h.Users = func(int) (string, error) { return "daemon", nil }
			r, jobs := fx.record(t, 2, "daemon", spool.StateQueued, "101", "")
			fx.intents(t, r, spool.PilotJob{Token: tok, TimeLimit: time.Minute})
			fx.slurm.jobs = jobs
			return Request{Op: OpSubmitPilots, Record: r.DirName(), Tokens: []string{tok}}
		}, "is a system account", ""},
		{"submit a pilot for root", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, 0, "root", spool.StateQueued, "101", "")
			fx.intents(t, r, spool.PilotJob{Token: tok, TimeLimit: time.Minute})
			fx.slurm.jobs = jobs
			return Request{Op: OpSubmitPilots, Record: r.DirName(), Tokens: []string{tok}}
		}, "does not act for root", ""},
		{"submit a pilot whose anchor is another's", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, aliceUID, alice, spool.StateQueued, "101", "")
			fx.intents(t, r, spool.PilotJob{Token: tok, TimeLimit: time.Minute})
			jobs[0].User = "bob"
			fx.slurm.jobs = jobs
			return Request{Op: OpSubmitPilots, Record: r.DirName(), Tokens: []string{tok}}
		}, "belongs to bob", ""},
		{"submit a pilot for a record that does not exist", func(t *testing.T, fx *fixture) Request {
			return Request{Op: OpSubmitPilots, Record: "1500.0190aaaaaaaa-12345678", Tokens: []string{tok}}
		}, "record 1500.0190aaaaaaaa-12345678", ""},
		{"cancel a recorded pilot", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, aliceUID, alice, spool.StateRunning, "101", "")
			r.PilotJobs = []spool.PilotJob{{ID: "500"}}
			fx.rs.Put(r)
			fx.slurm.jobs = append(jobs, qjob{ID: "500", ArrayID: "500", State: "RUNNING", Partition: "pilot", User: alice})
			return Request{Op: OpCancelPilot, Record: r.DirName(), Job: "500"}
		}, "", "scancel 500"},
		{"signal a recorded pilot's batch shell (give way)", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, aliceUID, alice, spool.StateRunning, "101", "")
			fx.intents(t, r, spool.PilotJob{ID: "500"})
			fx.slurm.jobs = append(jobs, qjob{ID: "500", ArrayID: "500", State: "RUNNING", Partition: "pilot", User: alice})
			return Request{Op: OpSignalPilot, Record: r.DirName(), Job: "500"}
		}, "", "scancel --signal=TERM --batch 500"},
		{"cancel a recorded pilot only if pending", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, aliceUID, alice, spool.StateRunning, "101", "")
			fx.intents(t, r, spool.PilotJob{ID: "500"})
			fx.slurm.jobs = append(jobs, qjob{ID: "500", ArrayID: "500", State: "PENDING", Partition: "pilot", User: alice})
			return Request{Op: OpCancelPendingPilot, Record: r.DirName(), Job: "500"}
		}, "", "scancel --state=PENDING 500"},
		{"signal a job the record does not name as a pilot", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, aliceUID, alice, spool.StateRunning, "101", "")
			fx.slurm.jobs = append(jobs, qjob{ID: "500", ArrayID: "500", State: "RUNNING", Partition: "pilot", User: alice})
			return Request{Op: OpSignalPilot, Record: r.DirName(), Job: "500"}
		}, "not a pilot of record", ""},
		{"cancel-pending a pilot id that is now another user's job", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, aliceUID, alice, spool.StateRunning, "101", "")
			fx.intents(t, r, spool.PilotJob{ID: "500"})
			fx.slurm.jobs = append(jobs, qjob{ID: "500", ArrayID: "500", State: "PENDING", Partition: "pilot", User: "bob"})
			return Request{Op: OpCancelPendingPilot, Record: r.DirName(), Job: "500"}
		}, "belongs to bob", ""},
		{"cancel a job the record does not name as a pilot", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, aliceUID, alice, spool.StateRunning, "101", "")
			fx.slurm.jobs = append(jobs, qjob{ID: "500", ArrayID: "500", State: "RUNNING", Partition: "pilot", User: alice})
			return Request{Op: OpCancelPilot, Record: r.DirName(), Job: "500"}
		}, "not a pilot of record", ""},
		{"cancel a pilot id that is now another user's job", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, aliceUID, alice, spool.StateRunning, "101", "")
			r.PilotJobs = []spool.PilotJob{{ID: "500"}}
			fx.rs.Put(r)
			fx.slurm.jobs = append(jobs, qjob{ID: "500", ArrayID: "500", State: "RUNNING", Partition: "pilot", User: "bob"})
			return Request{Op: OpCancelPilot, Record: r.DirName(), Job: "500"}
		}, "belongs to bob", ""},
		{"cancel a recorded pilot outside the pilot partition", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, aliceUID, alice, spool.StateRunning, "101", "")
			r.PilotJobs = []spool.PilotJob{{ID: "500"}}
			fx.rs.Put(r)
			fx.slurm.jobs = append(jobs, qjob{ID: "500", ArrayID: "500", State: "RUNNING", Partition: "batch", User: alice})
			return Request{Op: OpCancelPilot, Record: r.DirName(), Job: "500"}
		}, "not the pilot partition", ""},
		{"cancel the pending elements of a shadow", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, aliceUID, alice, spool.StateRunning, "101", "102")
			fx.slurm.jobs = jobs
			return Request{Op: OpCancelPending, Job: "102"}
		}, "", "scancel --state=PENDING 102"},
		{"start a shadow", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, aliceUID, alice, spool.StateQueued, "101", "102")
			fx.slurm.jobs = jobs[:2] // the anchor and the shadow array, all pending (none started before glean lets it)
			return Request{Op: OpStartShadow, Job: "102"}
		}, "", "scontrol update JobId=102 StartTime=now"},
		{"start-shadow of an ended job", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, aliceUID, alice, spool.StateCancelled, "101", "102")
			fx.slurm.jobs = jobs
			return Request{Op: OpStartShadow, Job: "102"}
		}, "is cancelled; glean starts only the shadow arrays of queued or running jobs", ""},
		{"start-shadow on an anchor", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, aliceUID, alice, spool.StateQueued, "101", "102")
			fx.slurm.jobs = jobs
			return Request{Op: OpStartShadow, Job: "101"}
		}, "start-shadow is for shadow arrays only", ""},
		{"start-shadow on someone else's array", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, aliceUID, alice, spool.StateQueued, "101", "102")
			jobs[2].User = "bob"
			fx.slurm.jobs = jobs
			return Request{Op: OpStartShadow, Job: "102"}
		}, "belongs to bob", ""},
		{"cancel-pending on an anchor", func(t *testing.T, fx *fixture) Request {
			_, jobs := fx.record(t, aliceUID, alice, spool.StateRunning, "101", "102")
			fx.slurm.jobs = jobs
			return Request{Op: OpCancelPending, Job: "101"}
		}, "for shadow arrays only", ""},
		{"a record not the daemon's", func(t *testing.T, fx *fixture) Request {
			r, jobs := fx.record(t, aliceUID, alice, spool.StateAccepting, "101", "")
			if os.Getuid() != 0 {
				t.Skip("needs root to chown")
			}
			os.Chown(filepath.Join(fx.sp.Dir, spool.JobsDir, r.DirName(), spool.RecordFile), aliceUID, -1)
			fx.slurm.jobs = jobs
			return Request{Op: OpHold, Job: "101"}
		}, "not a job glean recorded", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			req := tc.setup(t, fx)
			_, err := fx.h.Handle(context.Background(), req)
			slices.Sort(fx.slurm.calls) // a request's sbatches run concurrently
			calls := strings.Join(fx.slurm.calls, ",")
			tc.call = strings.ReplaceAll(tc.call, "RECORD", req.Record)
			if tc.refuse == "" {
				if err != nil || calls != tc.call {
					t.Fatalf("err %v, Slurm calls %q; want %q", err, calls, tc.call)
				}
				return
			}
			if !IsRefusal(err) || !strings.Contains(err.Error(), tc.refuse) {
				t.Fatalf("err = %v, want a refusal containing %q", err, tc.refuse)
			}
			if calls != "" {
				t.Errorf("acted although refused: %s", calls)
			}
		})
	}
}

// One request submits a record's pilots; one that fails leaves its
// place empty and the others keep their ids.
func TestSubmitPilotsPartly(t *testing.T) {
	fx := newFixture(t)
	r, jobs := fx.record(t, aliceUID, alice, spool.StateRunning, "101", "")
	toks := []string{tok, tok2, "00000000000000000000000000000003"}
	for _, tk := range toks {
		fx.intents(t, r, spool.PilotJob{Token: tk, TimeLimit: 5 * time.Minute})
	}
	fx.slurm.jobs = jobs
	fx.slurm.failWith = "glean-pilot:" + tok2
	ids, err := fx.h.Handle(context.Background(), Request{Op: OpSubmitPilots, Record: r.DirName(), Tokens: toks})
	if err == nil || IsRefusal(err) || !strings.Contains(err.Error(), "1 of 3 pilots not submitted") {
		t.Fatalf("err = %v", err)
	}
	if len(ids) != 3 || ids[0] == "" || ids[1] != "" || ids[2] == "" || ids[0] == ids[2] {
		t.Fatalf("ids %q", ids)
	}
}

// A squeue that fails is an error (not a refusal), and nothing is done.
func TestHandleFailsClosed(t *testing.T) {
	fx := newFixture(t)
	_, jobs := fx.record(t, aliceUID, alice, spool.StateAccepting, "101", "")
	fx.slurm.jobs = jobs
	fx.slurm.fail = errors.New("slurmctld down")
	_, err := fx.h.Handle(context.Background(), Request{Op: OpHold, Job: "101"})
	if err == nil || IsRefusal(err) || len(fx.slurm.calls) != 0 {
		t.Fatalf("err %v calls %v", err, fx.slurm.calls)
	}
}

func TestParseQueue(t *testing.T) {
	seal := "s1"
	end := sealMark + seal + recEnd
	rec := func(f ...string) string { return strings.Join(f, fieldSep) + end }
	jobs, err := parseQueue(strings.NewReader(rec("7", "N/A", "PENDING", "glean", "alice", "glean:a:b\x1f\x1e\nforged")+rec("9", "8", "RUNNING", "batch", "bob", "(null)")), seal)
	if err != nil || len(jobs) != 2 || jobs[0].ArrayID != "7" || !strings.HasPrefix(jobs[0].Comment, "glean:a:b") || jobs[1].ArrayID != "8" || jobs[1].Comment != "" {
		t.Fatalf("%+v %v", jobs, err)
	}
	for _, bad := range []string{
		rec("7", "N/A", "PENDING", "glean", "alice", "c")[:10],
		rec("x", "N/A", "PENDING", "glean", "alice", "c"),
		rec("7", "8_1", "PENDING", "glean", "alice", "c"),
		rec("7", "N/A", "PENDING", "glean", "", "c"),
		rec("7", "N/A", "PENDING"),
	} {
		if _, err := parseQueue(strings.NewReader(bad), seal); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func FuzzParseQueue(f *testing.F) {
	seal := "s1"
	end := sealMark + seal + recEnd
	f.Add(strings.Join([]string{"7", "N/A", "PENDING", "glean", "alice", "glean:a:b"}, fieldSep) + end)
	f.Add("9\x1f8\x1fRUNNING\x1fbatch\x1fbob\x1f(null)" + end + "junk")
	f.Fuzz(func(t *testing.T, out string) {
		jobs, err := parseQueue(strings.NewReader(out), seal)
		if err != nil {
			return
		}
		for _, j := range jobs {
			if !slurm.ValidJobID(j.ID) || !slurm.ValidJobID(j.ArrayID) || j.User == "" {
				t.Fatalf("bad job %+v", j)
			}
		}
	})
}

// doFunc adapts a function to Doer.
type doFunc func(ctx context.Context, req Request) error

func (f doFunc) Handle(ctx context.Context, req Request) ([]string, error) { return nil, f(ctx, req) }

// serve runs a Server on a socket in a fresh directory until the test ends.
func serve(t *testing.T, daemonUID int, do Doer) (socket string, logs *syncBuf) {
	t.Helper()
	dir, err := os.MkdirTemp("", "gh-") // short: sun_path holds 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	logs = &syncBuf{}
	s := &Server{Socket: filepath.Join(dir, "run", "helper.sock"), DaemonUID: daemonUID, GID: os.Getgid(),
		Timeout: 5 * time.Second, Do: do, Log: slog.New(slog.NewTextHandler(logs, nil))}
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s.Socket, logs
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServerAndClient(t *testing.T) {
	var mu sync.Mutex
	var got []Request
	sock, logs := serve(t, os.Getuid(), doFunc(func(_ context.Context, req Request) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, req)
		if req.Job == "13" {
			return &Refusal{Reason: "job 13 is not a job glean recorded"}
		}
		if req.Job == "14" {
			return errors.New("scontrol hold 14: exit code 1: slurm_suspend error:\nAccess/permission denied")
		}
		return nil
	}))
	st, err := os.Stat(filepath.Dir(sock))
	if err != nil || st.Mode().Perm() != DirMode {
		t.Errorf("socket directory: %v %v", st.Mode(), err)
	}
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != SocketMode {
		t.Errorf("socket: %v %v", st.Mode(), err)
	}
	c := &Client{Socket: sock, Timeout: 5 * time.Second}
	ctx := context.Background()
	if err := c.Hold(ctx, "12"); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, "12"); err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx, "12"); err != nil {
		t.Fatal(err)
	}
	err = c.Hold(ctx, "13")
	if !IsRefusal(err) || !strings.Contains(err.Error(), "privileged helper") || !strings.Contains(err.Error(), "hold 13: job 13 is not a job glean recorded") {
		t.Errorf("refusal: %v", err)
	}
	err = c.Hold(ctx, "14")
	if err == nil || IsRefusal(err) || !strings.Contains(err.Error(), "failed: scontrol hold 14") || strings.Contains(err.Error(), "\n") {
		t.Errorf("failure: %v", err)
	}
	mu.Lock()
	var seen []string
	for _, r := range got {
		seen = append(seen, r.Op+" "+r.Job)
	}
	if strings.Join(seen, ",") != "hold 12,release 12,cancel 12,hold 13,hold 14" {
		t.Errorf("requests %v", got)
	}
	mu.Unlock()
	// Raw requests the client would never send.
	for _, tc := range []struct{ name, raw, want string }{
		{"malformed", "{\"op\":\"hold\"\n", "malformed request"},
		{"unknown field", `{"op":"hold","job":"1","uid":0}` + "\n", `unknown field \"uid\"`},
		{"no newline", `{"op":"hold","job":"1"}`, "no newline"},
		{"too long", `{"op":"hold","job":"1","x":"` + strings.Repeat("a", MaxRequestBytes) + "\"}\n", fmt.Sprintf("over %d bytes", MaxRequestBytes)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if resp := raw(t, sock, tc.raw); !strings.Contains(resp, `"refused":true`) || !strings.Contains(resp, tc.want) {
				t.Errorf("answer %s, want a refusal containing %s", resp, tc.want)
			}
		})
	}
	mu.Lock()
	if len(got) != 5 {
		t.Errorf("a bad request reached the handler: %v", got)
	}
	mu.Unlock()
	if !strings.Contains(logs.String(), "refused") {
		t.Errorf("refusals not logged:\n%s", logs)
	}
}

func raw(t *testing.T, sock, req string) string {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, req)
	c.(*net.UnixConn).CloseWrite()
	out, _ := io.ReadAll(c)
	return string(out)
}

// A peer whose uid is not the daemon's is refused before it is read.
func TestServerRefusesOtherUIDs(t *testing.T) {
	sock, logs := serve(t, os.Getuid()+4242, doFunc(func(context.Context, Request) error {
		t.Error("handler called")
		return nil
	}))
	err := (&Client{Socket: sock}).Hold(context.Background(), "12")
	want := fmt.Sprintf("uid %d is not the daemon's user (uid %d)", os.Getuid(), os.Getuid()+4242)
	if !IsRefusal(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if !strings.Contains(logs.String(), want) {
		t.Errorf("not logged:\n%s", logs)
	}
}

// A helper that does not answer in time: the client gives up with an
// error that says so.
func TestClientTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	sock, _ := serve(t, os.Getuid(), doFunc(func(ctx context.Context, _ Request) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}))
	err := (&Client{Socket: sock, Timeout: 200 * time.Millisecond}).Cancel(context.Background(), "12")
	if err == nil || !strings.Contains(err.Error(), "cancel 12: no answer") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	err = (&Client{Socket: filepath.Join(filepath.Dir(sock), "nosuch.sock")}).Cancel(context.Background(), "12")
	if err == nil || !strings.Contains(err.Error(), "is glean-helper running?") {
		t.Fatalf("err = %v", err)
	}
}

// Listen refuses a socket directory that is a symlink, and a socket path
// that is not a socket.
func TestListenRefuses(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "real"), 0o755)
	os.Symlink("real", filepath.Join(dir, "link"))
	s := &Server{Socket: filepath.Join(dir, "link", "h.sock"), GID: os.Getgid()}
	if _, err := s.Listen(); err == nil || !strings.Contains(err.Error(), "not a directory owned by") {
		t.Errorf("symlinked directory: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "real", "h.sock"), nil, 0o644)
	s.Socket = filepath.Join(dir, "real", "h.sock")
	if _, err := s.Listen(); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("a file at the socket path: %v", err)
	}
}

// A reload (SIGHUP) whose file fails its check leaves the helper serving;
// one that passes stops taking connections, answers the request under way,
// and only then has Serve return ErrReload for main to re-execute.
func TestServeReload(t *testing.T) {
	dir, err := os.MkdirTemp("", "gh-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	started, release := make(chan string, 4), make(chan struct{})
	hup, checked := make(chan os.Signal, 1), make(chan bool, 4)
	valid := false
	logs := &syncBuf{}
	s := &Server{Socket: filepath.Join(dir, "helper.sock"), DaemonUID: os.Getuid(), GID: os.Getgid(), Timeout: 5 * time.Second,
		Log: slog.New(slog.NewTextHandler(logs, nil)), Reload: hup,
		Check: func() error {
			defer func() { checked <- valid }()
			if !valid {
				return errors.New("/etc/glean/glean.toml: partitions.pilot: empty")
			}
			return nil
		},
		Do: doFunc(func(_ context.Context, req Request) error {
			started <- req.Job
			if req.Job == "2" {
				<-release
			}
			return nil
		})}
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), ln) }()
	c := &Client{Socket: s.Socket, Timeout: 5 * time.Second}

	hup <- syscall.SIGHUP
	<-checked
	if err := c.Hold(context.Background(), "1"); err != nil {
		t.Fatalf("after a refused reload: %v", err)
	}
	<-started
	if !strings.Contains(logs.String(), "config reload refused") || !strings.Contains(logs.String(), "partitions.pilot: empty") {
		t.Errorf("refusal not logged:\n%s", logs)
	}

	valid = true
	answered := make(chan error, 1)
	go func() { answered <- c.Hold(context.Background(), "2") }()
	<-started
	hup <- syscall.SIGHUP
	<-checked
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Lstat(s.Socket); errors.Is(err, fs.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the socket still listens after a valid reload")
		}
		<-time.After(5 * time.Millisecond) // poll interval
	}
	select {
	case err := <-done:
		t.Fatalf("Serve returned (%v) with a request under way", err)
	default:
	}
	close(release)
	if err := <-answered; err != nil {
		t.Errorf("the request under way: %v", err)
	}
	if err := <-done; !errors.Is(err, ErrReload) {
		t.Errorf("Serve: %v, want ErrReload", err)
	}
}
