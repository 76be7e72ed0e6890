package agent

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// Made-up uids for the walk's rules (files really chowned: root only).
const (
	uidA = 54321 // the squatter
	uidB = 54322 // the job's owner
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test chowns directories to other users")
	}
}

// node is one file of a scenario's tree, relative to its base.
type node struct {
	path   string
	mode   os.FileMode // fs.ModeSymlink: a symlink to target
	uid    int
	target string
}

// build makes the nodes under base (chowned, modes set exactly).
func build(t *testing.T, base string, nodes []node) {
	t.Helper()
	for _, n := range nodes {
		p := filepath.Join(base, n.path)
		var err error
		switch {
		case n.mode&fs.ModeSymlink != 0:
			err = os.Symlink(n.target, p)
		case n.mode.IsDir():
			err = os.Mkdir(p, 0o700)
		default:
			err = os.WriteFile(p, []byte("x"), 0o600)
		}
		if err == nil {
			err = os.Lchown(p, n.uid, n.uid)
		}
		if err == nil && n.mode&fs.ModeSymlink == 0 {
			err = os.Chmod(p, n.mode&(fs.ModePerm|fs.ModeSticky))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// base is a directory owner may walk: in /tmp (root's, sticky) the next
// component must be the owner's.
func base(t *testing.T, owner int) string {
	t.Helper()
	d, err := os.MkdirTemp("", "glckroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chown(d, owner, owner); err != nil {
		t.Fatal(err)
	}
	return d
}

const (
	dir    = fs.ModeDir
	sticky = fs.ModeDir | fs.ModeSticky
	link   = fs.ModeSymlink
)

// The walk of checkpoint.root, one component at a time, for B.
func TestCheckpointRootWalk(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name  string
		tree  []node
		root  string // below the base
		want  string // "" ok, else a piece of the error
		isErr error  // or an error it must match
	}{
		{"B's directory in a shared sticky scratch", []node{{"scratch", sticky | 0o777, 0, ""}, {"scratch/b", dir | 0o700, uidB, ""}},
			"scratch/b", "", nil},
		{"root's sticky directory inside another (/tmp/scratch)", []node{{"tmp", sticky | 0o777, 0, ""}, {"tmp/scratch", sticky | 0o777, 0, ""}, {"tmp/scratch/b", dir | 0o700, uidB, ""}},
			"tmp/scratch/b", "", nil},
		{"B's root created by A in the shared scratch (squatting)", []node{{"scratch", sticky | 0o777, 0, ""}, {"scratch/b", dir | 0o777, uidA, ""}},
			"scratch/b", "owned by uid 54321, not yours", nil},
		{"A's 0700 directory in B's place", []node{{"scratch", sticky | 0o777, 0, ""}, {"scratch/b", dir | 0o700, uidA, ""}, {"scratch/b/ck", dir | 0o700, uidB, ""}},
			"scratch/b/ck", "owned by uid 54321, not yours", nil},
		{"A's symlink in B's place, to B's real directory", []node{{"scratch", sticky | 0o777, 0, ""}, {"real", dir | 0o700, uidB, ""}, {"scratch/b", link, uidA, "../real"}},
			"scratch/b", "a symlink that root did not make", nil},
		{"root's symlink in a shared sticky directory", []node{{"scratch", sticky | 0o777, 0, ""}, {"real", dir | 0o700, uidB, ""}, {"scratch/b", link, 0, "../real"}},
			"scratch/b", "a symlink that root did not make in a directory only root writes", nil},
		{"root's symlink in root's own directory (/home -> /export/home)", []node{{"etc", dir | 0o755, 0, ""}, {"export", dir | 0o755, 0, ""}, {"export/b", dir | 0o700, uidB, ""}, {"etc/home", link, 0, "../export"}},
			"etc/home/b", "", nil},
		{"root's symlink in a directory B may write", []node{{"mine", dir | 0o700, uidB, ""}, {"export", dir | 0o755, 0, ""}, {"mine/home", link, 0, "../export"}},
			"mine/home", "a symlink that root did not make", nil},
		{"a world-writable directory without the sticky bit", []node{{"pub", dir | 0o777, 0, ""}, {"pub/b", dir | 0o700, uidB, ""}},
			"pub/b", "may be written by others (mode 0777)", nil},
		{"a sticky world-writable directory of A's", []node{{"pub", sticky | 0o777, uidA, ""}, {"pub/b", dir | 0o700, uidB, ""}},
			"pub/b", "neither root nor you", nil},
		{"B's own group-writable directory", []node{{"b", dir | 0o770, uidB, ""}},
			"b", "may be written by others (mode 0770)", nil},
		{"a directory of A's, not writable by others", []node{{"a", dir | 0o755, uidA, ""}, {"a/b", dir | 0o700, uidB, ""}},
			"a/b", "neither root nor you", nil},
		{"a symlink loop", []node{{"etc", dir | 0o755, 0, ""}, {"etc/x", link, 0, "y"}, {"etc/y", link, 0, "x"}},
			"etc/x", "more than 16 symlinks", nil},
		{"a file where a directory was expected", []node{{"f", 0o600, uidB, ""}},
			"f/ck", "", syscall.ENOTDIR},
		{"missing, not created", nil, "nothing/here", "", fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := base(t, uidB)
			build(t, b, tc.tree)
			f, err := openCheckpointRoot(filepath.Join(b, tc.root), uidB, false)
			if f != nil {
				f.Close()
			}
			switch {
			case tc.isErr != nil:
				if !errors.Is(err, tc.isErr) {
					t.Errorf("got %v, want %v", err, tc.isErr)
				}
			case tc.want == "":
				if err != nil {
					t.Errorf("refused: %v", err)
				}
			case err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrCheckpointRoot):
				t.Errorf("got %v, want a refusal with %q", err, tc.want)
			}
			// glean.sh's glean_checkpoint_dir applies the same rules, as B
			// (a missing path is fine there: mkdir -p makes it B's).
			sh := exec.Command("/bin/sh", "-c", `. "$0"; _glean_safe_dir "$1"`, repoFile(t, "wrappers/glean.sh"), filepath.Join(b, tc.root))
			sh.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uidB, Gid: uidB}}
			out, shErr := sh.CombinedOutput()
			if wantOK := err == nil || errors.Is(err, fs.ErrNotExist); (shErr == nil) != wantOK {
				t.Errorf("glean.sh's check: %v %q; the agent's: %v", shErr, out, err)
			} else if !wantOK && tc.want != "" && !strings.Contains(string(out), tc.want) {
				t.Errorf("glean.sh's check says %q, want %q", out, tc.want)
			}
		})
	}
}

// A squatted root gives B's job no checkpoint directory, and B's agent
// creates nothing in A's directory; an <anchor> swapped for a symlink
// between the job's preparation and a task's (the race the audit
// reproduced) is refused, and the link's target is untouched by the
// emptying (RemoveAll as root would have removed it), the completion and
// the retention sweep.
func TestCheckpointSwappedSymlink(t *testing.T) {
	needRoot(t)
	b := base(t, uidB)
	build(t, b, []node{{"scratch", sticky | 0o777, 0, ""}, {"scratch/b", dir | 0o777, uidA, ""}})
	f := newFixture(t, 1, "#!/bin/sh\n", nil, nil)
	squatted := Checkpoints{Spool: f.sp.Dir, Root: filepath.Join(b, "scratch", "b"), UID: uidB}
	_, err := squatted.prepareJob(&Job{UID: f.uid, ID: f.id, Entry: &spool.Entry{Anchor: testAnchor}})
	if !errors.Is(err, ErrCheckpointRoot) {
		t.Errorf("prepareJob under A's directory: %v, want a refusal", err)
	}
	if ents, _ := os.ReadDir(squatted.Root); len(ents) != 0 {
		t.Errorf("B's agent created %v in A's directory", ents)
	}

	// Root's own: the agent runs as root here (uid 0 owns everything).
	b = base(t, 0)
	root := filepath.Join(b, "ck")
	build(t, b, []node{{"ck", dir | 0o700, 0, ""}, {"victim", dir | 0o700, 0, ""}, {"victim/0", dir | 0o700, 0, ""}, {"victim/0/precious", 0o600, 0, ""}})
	c := Checkpoints{Spool: f.sp.Dir, Root: root, UID: 0}
	job := &Job{UID: f.uid, ID: f.id, Entry: &spool.Entry{Anchor: testAnchor}}
	if mErr, err := c.prepareJob(job); err != nil || mErr != nil {
		t.Fatal(err)
	}
	anchor := filepath.Join(root, testAnchor)
	if _, err := os.Stat(filepath.Join(anchor, jobMarker)); err != nil {
		t.Fatalf("the marker: %v", err)
	}
	// Another user swaps <anchor> for a link to the victim (here: the
	// link is A's, as A could make it in a directory A may write).
	swap(t, anchor, filepath.Join(b, "victim"))
	precious := filepath.Join(b, "victim", "0", "precious")
	if dir, _, err := c.prepareTask(testAnchor, 0, false, false, true); err == nil || dir != "" {
		t.Errorf("prepareTask through a swapped <anchor>: %q %v, want a refusal", dir, err)
	}
	if err := c.completed(testAnchor, 0); err == nil {
		t.Error("completed through a swapped <anchor>: no error")
	}
	// The retention would remove a job directory whose record is gone.
	if err := os.WriteFile(filepath.Join(b, "victim", jobMarker), []byte(`{"spool":"`+f.sp.Dir+`","record":"0.000000000000-00000000"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sweep(f.sp, 0, time.Now()); err != nil {
		t.Errorf("sweep: %v", err)
	}
	if _, err := os.Stat(precious); err != nil {
		t.Errorf("the link's target was touched: %v", err)
	}
	if _, err := os.Lstat(anchor); err != nil {
		t.Errorf("the swapped link itself: %v", err)
	}
	// The root itself swapped for A's link: refused at the walk.
	swap(t, root, filepath.Join(b, "victim"))
	if _, _, err := c.prepareTask(testAnchor, 0, false, false, true); !errors.Is(err, ErrCheckpointRoot) {
		t.Errorf("prepareTask through a swapped root: %v, want a refusal", err)
	}
	if _, err := os.Stat(precious); err != nil {
		t.Errorf("the link's target was touched: %v", err)
	}
}

// swap moves path aside and puts A's symlink to target in its place.
func swap(t *testing.T, path, target string) {
	t.Helper()
	if err := os.Rename(path, path+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(path, uidA, uidA); err != nil {
		t.Fatal(err)
	}
}

// A task whose checkpoint directory is refused runs without one: no
// GLEAN_CHECKPOINT_DIR (GLEAN_CHECKPOINT_ROOT still names the root, so
// glean_checkpoint_dir refuses it too), and its result's detail says why.
func TestRefusedCheckpointDirInDetail(t *testing.T) {
	f := newFixture(t, 1, "#!/bin/sh\necho \"dir=[$GLEAN_CHECKPOINT_DIR] root=[$GLEAN_CHECKPOINT_ROOT]\"\n", nil,
		func(e *spool.Entry) { e.Glean.Checkpoint = true })
	root := filepath.Join(t.TempDir(), "ck")
	// Someone else's uid: the directories the agent makes are not its.
	c := Checkpoints{Spool: f.sp.Dir, Root: root, UID: os.Getuid() + 1}
	a := f.agent("301", 1, func(o *Options) { o.Checkpoint = c })
	if why := runAgent(t, context.Background(), a)(); why != EndIdle && why != EndFinished {
		t.Fatalf("agent ended %q", why)
	}
	res := f.results()
	if len(res) != 1 || !strings.Contains(res[0].Detail, "no checkpoint directory: ") {
		t.Fatalf("results %+v, want the refusal in the detail", res)
	}
	out := readFile(t, filepath.Join(f.cwd, "slurm-"+testAnchor+"_0.out"))
	if want := "dir=[] root=[" + root + "]\n"; out != want {
		t.Errorf("task output %q, want %q", out, want)
	}
}

// The job's agents start together and write the same marker: none of them
// loses its checkpoint directories to another's temporary file.
func TestMarkerWrittenConcurrently(t *testing.T) {
	f := newFixture(t, 1, "#!/bin/sh\n", nil, nil)
	c := Checkpoints{Spool: f.sp.Dir, Root: filepath.Join(t.TempDir(), "ck"), UID: os.Getuid()}
	job := &Job{UID: f.uid, ID: f.id, Entry: &spool.Entry{Anchor: testAnchor}}
	errs := make(chan error, 16)
	for i := 0; i < cap(errs); i++ {
		go func() {
			mErr, err := c.prepareJob(job)
			errs <- errors.Join(mErr, err)
		}()
	}
	for i := 0; i < cap(errs); i++ {
		if err := <-errs; err != nil {
			t.Errorf("agent %d: %v", i, err)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(c.Root, testAnchor))
	if len(ents) != 1 || ents[0].Name() != jobMarker {
		t.Errorf("the job's directory holds %v, want the marker alone", ents)
	}
}
