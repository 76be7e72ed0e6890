package slurm

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// sinfoFormat prints one record per (node, partition).
const sinfoFormat = "%N\x1f%T\x1f%P\x1f%c\x1f%m\x1e"

var sinfoFields = [...]string{"NodeName", "State", "Partition", "CPUs", "Memory"}

// SinfoArgv is the sinfo command of one observation. -a (--all) lists
// the nodes of every partition: without it sinfo leaves out partitions
// that are Hidden and those whose AllowGroups leave out the caller
// (sinfo(1), 22.05), such as a pilot partition closed to gleand's user.
func SinfoArgv() []string { return []string{"sinfo", "-a", "-h", "-N", "-o", sinfoFormat} }

// ParseSinfo parses SinfoArgv's output and merges the lines of a node into
// one Node listing its partitions, in the order nodes first appear. A bad
// line is dropped with an error; the node may still come from its other
// lines, with fewer partitions.
func ParseSinfo(r io.Reader) ([]cluster.Node, []error) {
	recs, errs := splitRecords(r, "sinfo", recordEnd)
	var nodes []cluster.Node
	index := make(map[string]int)
	for i, rec := range recs {
		n, part, err := parseNodeLine(rec)
		if err != nil {
			errs = append(errs, fmt.Errorf("sinfo record %d: %w", i+1, err))
			continue
		}
		k, ok := index[n.Name]
		if !ok {
			k = len(nodes)
			index[n.Name] = k
			nodes = append(nodes, n)
		}
		if part != "" && !slices.Contains(nodes[k].Partitions, part) {
			nodes[k].Partitions = append(nodes[k].Partitions, part)
		}
	}
	for i := range nodes { // sinfo's line order varies; make it stable
		slices.Sort(nodes[i].Partitions)
	}
	return nodes, errs
}

func parseNodeLine(rec string) (cluster.Node, string, error) {
	f := strings.Split(rec, fieldSep)
	if len(f) != len(sinfoFields) {
		return cluster.Node{}, "", fmt.Errorf("%d fields, want %d", len(f), len(sinfoFields))
	}
	fieldErr := func(i int, err error) error { return fmt.Errorf("field %s: %w", sinfoFields[i], err) }
	n := cluster.Node{Name: f[0], RawState: f[1]}
	if f[0] == "" || checkHostChars(f[0]) != nil {
		return n, "", fieldErr(0, fmt.Errorf("bad node name %s", quote(f[0])))
	}
	var err error
	if n.State, err = NodeStateOf(f[1]); err != nil {
		return n, "", fieldErr(1, err)
	}
	part := strings.TrimSuffix(f[2], "*") // "*" marks the default partition
	if part == "n/a" {
		part = ""
	}
	// %c and %m end in "+" when sinfo merged nodes that differ; take the minimum.
	cpus, ok := parseDigits(strings.TrimSuffix(f[3], "+"), 9)
	if !ok {
		return n, "", fieldErr(3, fmt.Errorf("bad CPU count %s", quote(f[3])))
	}
	mem, ok := parseDigits(strings.TrimSuffix(f[4], "+"), 15)
	if !ok {
		return n, "", fieldErr(4, fmt.Errorf("bad memory %s", quote(f[4])))
	}
	n.CPUs, n.MemoryMB = int(cpus), mem
	return n, part, nil
}

// NodeStateOf maps sinfo's long state (%T), e.g. "idle", "drained",
// "mixed-", "idle~", "down*" or "mixed+drain", to a NodeState. Suffix
// flags win over the base state: "*" (not responding) is down, "~#%!@^"
// (power saving, reboot) are other, "$" (reservation) is reserved, "-"
// (planned by backfill) makes an idle node planned. A state name this
// table does not know is NodeUnknown, not an error, so that a new Slurm
// state makes one node unusable instead of the whole snapshot incomplete;
// text that is no state name at all is an error.
func NodeStateOf(raw string) (cluster.NodeState, error) {
	base := strings.TrimRight(raw, "*~#%!@^$-+")
	flags := raw[len(base):]
	if base == "" || strings.Trim(strings.ToLower(base), "abcdefghijklmnopqrstuvwxyz_+") != "" {
		return cluster.NodeUnknown, fmt.Errorf("bad node state %s", quote(raw))
	}
	parts := strings.Split(strings.ToLower(base), "+")
	st := baseNodeState(parts[0])
	// A combination such as "mixed+drain" is as bad as its worst part.
	for _, p := range parts[1:] {
		if s := baseNodeState(p); s == cluster.NodeDown || s == cluster.NodeDrain || s == cluster.NodeOther {
			if !(st == cluster.NodeDown || st == cluster.NodeDrain) {
				st = s
			}
		}
	}
	switch {
	case strings.Contains(flags, "*"):
		return cluster.NodeDown, nil
	case strings.ContainsAny(flags, "~#%!@^"):
		return cluster.NodeOther, nil
	case strings.Contains(flags, "$") && st.Usable():
		return cluster.NodeReserved, nil
	case strings.Contains(flags, "-") && st == cluster.NodeIdle:
		return cluster.NodePlanned, nil
	}
	return st, nil
}

func baseNodeState(s string) cluster.NodeState {
	switch s {
	case "idle":
		return cluster.NodeIdle
	case "planned", "plnd":
		return cluster.NodePlanned
	case "allocated", "alloc":
		return cluster.NodeAlloc
	case "mixed", "mix":
		return cluster.NodeMixed
	case "completing", "comp":
		return cluster.NodeCompleting
	case "down", "fail", "no_respond", "not_responding":
		return cluster.NodeDown
	case "drained", "draining", "drain", "drng", "failing", "failg":
		return cluster.NodeDrain
	case "reserved", "resv":
		return cluster.NodeReserved
	case "maint", "future", "futr", "inval", "cloud", "blocked", "npc", "perfctrs",
		"power_down", "powered_down", "powering_down", "powering_up", "power_up", "pow_dn", "pow_up",
		"reboot", "reboot_issued", "reboot_requested", "boot":
		return cluster.NodeOther
	}
	return cluster.NodeUnknown
}
