package slurm

import (
	"strings"
	"testing"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

func TestExpandHostlist(t *testing.T) {
	tests := []struct {
		in, want string // want: names joined by spaces
	}{
		{"", ""},
		{"c1", "c1"},
		{"c[1-3]", "c1 c2 c3"},
		{"n[01-03]", "n01 n02 n03"},
		{"n[08-11]", "n08 n09 n10 n11"},
		{"n[9-10]", "n9 n10"},
		{"n[001-002,010]", "n001 n002 n010"},
		{"a[1,3-5]b", "a1b a3b a4b a5b"},
		{"r[1-2]n[1-2]", "r1n1 r1n2 r2n1 r2n2"},
		{"c[1-2],g1", "c1 c2 g1"},
		{"g1,c[1-2],x[7]", "g1 c1 c2 x7"},
		{"node-1.local", "node-1.local"},
		{"[1-2]", "1 2"},
	}
	for _, tc := range tests {
		got, err := ExpandHostlist(tc.in)
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("ExpandHostlist(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestExpandHostlistErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"c[1-", `bad hostlist "c[1-": unclosed '['`},
		{"c1]", `bad hostlist "c1]": unmatched ']'`},
		{"c[[1]]", `bad hostlist "c[[1]]": nested '['`},
		{"c[]", `bad hostlist "c[]": bad range ""`},
		{"c[3-1]", `bad hostlist "c[3-1]": bad range "3-1"`},
		{"c[1,,2]", `bad hostlist "c[1,,2]": bad range ""`},
		{"c[a-b]", `bad hostlist "c[a-b]": bad range "a-b"`},
		{"c[-1]", `bad hostlist "c[-1]": bad range "-1"`},
		{"c1,,c2", `bad hostlist "c1,,c2": empty name`},
		{"c 1", `bad host name "c 1"`},
		{"c[1-2] x", `bad hostlist "c[1-2] x": bad host name " x"`},
		{"c[0-100000]", `bad hostlist "c[0-100000]": more than 100000 names`},
		{"c[0-999999999]", `more than 100000 names`},
		{"a[1-1000]b[1-1000]", `more than 100000 names`},
		{"a[1-60000],b[1-60000]", `more than 100000 names`},
		{"c[1234567890]", `bad range "1234567890"`},
	}
	for _, tc := range tests {
		got, err := ExpandHostlist(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) || got != nil {
			t.Errorf("ExpandHostlist(%q) = %d names, %v; want error %q", tc.in, len(got), err, tc.want)
		}
	}
	if got, err := ExpandHostlist("c[1-100000]"); err != nil || len(got) != MaxHostlist || got[MaxHostlist-1] != "c100000" {
		t.Errorf("cap itself: %d names, %v", len(got), err)
	}
}

func TestParseTimeLimit(t *testing.T) {
	const d, h, m, s = 24 * time.Hour, time.Hour, time.Minute, time.Second
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"5", 5 * m},
		{"10:00", 10 * m},
		{"5:30", 5*m + 30*s},
		{"90:00", 90 * m},
		{"1:00:00", h},
		{"100:00:00", 100 * h},
		{"2-00:00:00", 2 * d},
		{"1-2", d + 2*h},
		{"1-2:30", d + 2*h + 30*m},
		{"1-02:03:04", d + 2*h + 3*m + 4*s},
		{"UNLIMITED", cluster.Unlimited},
		{"unlimited", cluster.Unlimited}, // Slurm compares case-insensitively (parse_time.c)
		{"INFINITE", cluster.Unlimited},
		{"999999999-00:00:00", cluster.Unlimited}, // beyond a Duration
	}
	for _, tc := range tests {
		got, err := ParseTimeLimit(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseTimeLimit(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "1:xx", "1:60", "1-24", "1-2:60:00", "1:2:3:4", "-5", "1-", "+5", " 5", "5m",
		"1::2", "NOT_SET", "N/A", "1-1-1", "1234567890"} {
		if got, err := ParseTimeLimit(in); err == nil {
			t.Errorf("ParseTimeLimit(%q) = %v, want error", in, got)
		}
	}
	if _, err := ParseTimeLimit("1:xx"); err == nil || err.Error() != `bad time "1:xx"` {
		t.Errorf("error text: %v", err)
	}
}

func TestFormatTimeLimit(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{cluster.Unlimited, "UNLIMITED"},
		{time.Minute, "1"},
		{119 * time.Second, "1"}, // rounds down
		{90 * time.Minute, "90"},
		{48 * time.Hour, "2880"},
		{59 * time.Second, "1"}, // never "0", which Slurm reads as no limit
		{0, "1"},
		{-time.Hour, "1"},
	}
	for _, tc := range tests {
		if got := FormatTimeLimit(tc.in); got != tc.want {
			t.Errorf("FormatTimeLimit(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// What FormatTimeLimit prints, ParseTimeLimit reads back.
	for _, d := range []time.Duration{time.Minute, 90 * time.Minute, 1000 * time.Hour} {
		if got, err := ParseTimeLimit(FormatTimeLimit(d)); err != nil || got != d {
			t.Errorf("round trip %v: %v %v", d, got, err)
		}
	}
}
