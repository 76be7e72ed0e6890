// Package agent is glean's pilot side (ARCHITECTURE.md, "Parts"): running
// as the job's owner inside a pilot or a shadow-array element, it takes the
// job's tasks from the spool, runs each as the job script would run as a
// plain array element, heartbeats their leases, dispatches only what fits
// in the allocation's remaining time, and on SIGTERM forwards the signal,
// gives the tasks the checkpoint grace and hands unfinished work back. It
// also holds the anchor's final run (Summarize). It never calls the daemon:
// the spool is the only channel.
package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/glean-hpc/glean/sidecar/spool"
)

// Job is one elastic job as its agent sees it: the daemon's record and the
// owner's own submission files.
type Job struct {
	UID    int
	ID     string // entry id
	Record *spool.Record
	Entry  *spool.Entry
	User   string // the owner's name (%u)

	Script    []byte   // the batch script
	Env       []string // the captured environment, KEY=VALUE
	ItemsPath string   // data-folder form: the items file ("" otherwise)
}

// ParseJobArg splits --job's "<uid>.<id>".
func ParseJobArg(s string) (uid int, id string, err error) {
	u, id, ok := strings.Cut(s, ".")
	uid, err = strconv.Atoi(u)
	if !ok || err != nil || uid < 0 || strconv.Itoa(uid) != u || !spool.ValidID(id) {
		return 0, "", fmt.Errorf("--job %q: want <uid>.<entry id>", s)
	}
	return uid, id, nil
}

// ReadRecord reads the daemon's public record of the job (status.json:
// job.json is the daemon's only) and refuses one that is not owner's.
func ReadRecord(sp *spool.Spool, uid int, id string, owner int) (*spool.Record, error) {
	if uid != owner {
		return nil, fmt.Errorf("job %s belongs to uid %d; this agent runs as uid %d", spool.RecordName(uid, id), uid, owner)
	}
	recs, err := sp.OpenRecords()
	if err != nil {
		return nil, err
	}
	defer recs.Close()
	rec, err := recs.Status(spool.RecordName(uid, id))
	if err != nil {
		return nil, fmt.Errorf("the daemon's record of job %s: %w", spool.RecordName(uid, id), err)
	}
	if rec.UID != owner || rec.ID != id {
		return nil, fmt.Errorf("the record %s names uid %d, entry %q; this agent runs as uid %d", spool.RecordName(uid, id), rec.UID, rec.ID, owner)
	}
	return rec, nil
}

// OwnEntry reads the owner's own submission (incoming/<id>/: entry.json
// and the script) and checks it is the entry the daemon took in: the
// record's EntryDigest (from an older glean without one: the same id and
// anchor).
func OwnEntry(sp *spool.Spool, rec *spool.Record) (*spool.Read, error) {
	read, err := sp.ReadIncoming(spool.Incoming{UID: rec.UID, Name: rec.ID}, spool.Limits{})
	if err != nil {
		return nil, fmt.Errorf("your submission %s: %w", sp.IncomingPath(rec.UID, rec.ID), err)
	}
	switch {
	case rec.EntryDigest != "" && read.Digest != rec.EntryDigest:
		return nil, fmt.Errorf("your submission %s changed since glean took the job in: it cannot run", sp.IncomingPath(rec.UID, rec.ID))
	case read.Entry.Anchor != rec.Anchor:
		return nil, fmt.Errorf("your submission %s names anchor %s, the record %s", sp.IncomingPath(rec.UID, rec.ID), read.Entry.Anchor, rec.Anchor)
	}
	return read, nil
}

// LoadJob reads the record (refusing one that is not owner's) and the
// owner's submission files: the entry the daemon took in, script, env and
// (data-folder form) items.
func LoadJob(sp *spool.Spool, uid int, id string, owner int) (*Job, error) {
	rec, err := ReadRecord(sp, uid, id, owner)
	if err != nil {
		return nil, err
	}
	switch rec.State {
	case spool.StateRejected, spool.StateAccepting, spool.StateSubmitted:
		return nil, fmt.Errorf("job %s was not taken in (state %s)", spool.RecordName(uid, id), rec.State)
	}
	read, err := OwnEntry(sp, rec)
	if err != nil {
		return nil, err
	}
	j := &Job{UID: uid, ID: id, Record: rec, Entry: read.Entry, User: userName(uid, rec.User), Script: read.Script}
	dir := sp.IncomingPath(uid, id)
	env, err := os.ReadFile(filepath.Join(dir, spool.EnvFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the captured environment: %w", err)
	}
	j.Env = ParseEnv(env)
	if j.Entry.Items != nil {
		j.ItemsPath = filepath.Join(dir, spool.ItemsFile)
	}
	return j, nil
}

// ParseEnv splits a NUL-separated KEY=VALUE list, dropping malformed
// entries.
func ParseEnv(data []byte) []string {
	var out []string
	for _, kv := range bytes.Split(data, []byte{0}) {
		if k, _, ok := bytes.Cut(kv, []byte("=")); ok && len(k) > 0 {
			out = append(out, string(kv))
		}
	}
	return out
}

// userName is the owner's login name: the system's, else the record's.
func userName(uid int, recorded string) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	if recorded != "" {
		return recorded
	}
	return strconv.Itoa(uid)
}

// Order is the job's task indices in dispatch order.
func (j *Job) Order() []int { return j.Entry.TaskIndices() }
