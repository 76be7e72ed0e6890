// Package spool holds glean's on-disk records and their atomic
// transitions. The spool directory on the shared filesystem is the only
// channel between the wrapper, the daemon and the agents, and the only
// durable state (docs/spool.md):
//
//	<dir>/users/                      setgid group glean, sticky, 3733: users create their own directory
//	<dir>/users/<uid>/                created by the user: group glean, 2770
//	<dir>/users/<uid>/incoming/<id>/  one submission (entry.json, script, env, items)
//	<dir>/jobs/                       the daemon's own records (owner glean, 0755)
//	<dir>/jobs/<uid>.<id>/            job.json, script, journal
//
// Writers create a temporary name and rename it into place within one
// directory. The daemon reads users' files only through descriptors opened
// with O_NOFOLLOW one path component at a time, never onto a mount
// (mount.go), and trusts the file's owner, never a field. The spool never
// calls Slurm.
package spool

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Directory names under the spool root.
const (
	UsersDir    = "users"
	JobsDir     = "jobs"
	IncomingDir = "incoming"
)

// Modes of the shared directories.
const (
	UsersMode    = os.ModeDir | os.ModeSetgid | os.ModeSticky | 0o733
	UserDirMode  = os.ModeDir | os.ModeSetgid | 0o770
	EntryDirMode = os.ModeDir | os.ModeSetgid | 0o750
	JobsMode     = os.ModeDir | 0o755
)

// tmpPrefix starts every name that is not yet in place; readers skip it.
const tmpPrefix = ".tmp-"

// Spool is a spool directory.
type Spool struct {
	Dir            string
	MaxEntryBytes  int64
	MaxScriptBytes int64
}

// NewID returns a new entry id: 12 hex digits of milliseconds since the
// epoch, '-', 8 random hex digits. Ids sort by submission time.
func NewID(now time.Time) string {
	var b [4]byte
	mustRand(b[:])
	return fmt.Sprintf("%012x-%s", now.UnixMilli(), hex.EncodeToString(b[:]))
}

// NewNonce returns 32 random hex digits.
func NewNonce() string {
	var b [16]byte
	mustRand(b[:])
	return hex.EncodeToString(b[:])
}

func mustRand(b []byte) {
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error()) // never fails on Linux
	}
}

// ValidID reports whether s has the form of an entry id.
func ValidID(s string) bool {
	id, r, ok := strings.Cut(s, "-")
	return ok && isHex(id, 12) && isHex(r, 8)
}

// UserDir is the directory of uid's files.
func (s *Spool) UserDir(uid int) string {
	return filepath.Join(s.Dir, UsersDir, strconv.Itoa(uid))
}

// IncomingPath is the directory of uid's entry id.
func (s *Spool) IncomingPath(uid int, id string) string {
	return filepath.Join(s.UserDir(uid), IncomingDir, id)
}

// RecordName is the name of a job's record directory under jobs/.
func RecordName(uid int, id string) string { return strconv.Itoa(uid) + "." + id }

// Comment is the anchor's --comment: it ties the anchor to its entry.
func Comment(id, nonce string) string { return "glean:" + id + ":" + nonce }

// ShadowComment is the shadow array's --comment.
func ShadowComment(id, nonce string) string { return ShadowCommentPrefix + id + ":" + nonce }

// ShadowCommentPrefix starts every shadow array's comment.
const ShadowCommentPrefix = "glean-shadow:"
