package spool

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

// Entries come from users' directories: fuzz the decoder and validator.
// A decoded, valid entry must survive Encode and Decode unchanged.
func FuzzDecodeEntry(f *testing.F) {
	e := testEntry(time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))
	good, _ := e.Encode()
	f.Add(good)
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":1,"uid":0}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"version":1,"array":{"ranges":[{"start":0,"end":4000000,"step":1}]},"tasks":4000001}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := DecodeEntry(bytes.NewReader(data), 1<<16)
		if err != nil {
			return
		}
		if e.Validate(Limits{MaxTasks: 1 << 20}) != nil {
			return
		}
		out, err := e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		e2, err := DecodeEntry(bytes.NewReader(out), 1<<20)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !reflect.DeepEqual(e, e2) {
			t.Fatalf("round trip changed the entry:\n%+v\n%+v", e, e2)
		}
	})
}
