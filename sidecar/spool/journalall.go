package spool

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// JournalAll appends evs to the record's journal with one write and one
// fsync: the daemon commits a round's attempts of a job at once (1,000
// results are one fsync, not 1,000). A write that fails part-way is cut
// off again (ftruncate to the size before), so that the journal holds all
// of evs or none.
func (rs *Records) JournalAll(r *Record, evs []Event) error {
	if len(evs) == 0 {
		return nil
	}
	var buf []byte
	for _, ev := range evs {
		line, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		buf = append(append(buf, line...), '\n')
	}
	f, err := rs.root.OpenFile(filepath.Join(r.DirName(), JournalFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	st, err := f.Stat()
	if err == nil {
		_, err = f.Write(buf)
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			if terr := f.Truncate(st.Size()); terr == nil {
				_ = f.Sync()
			}
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("spool: journal %s: %w", r.DirName(), err)
	}
	return nil
}
