package slurm

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/glean-hpc/glean/sidecar/cluster"
)

// PartitionsArgv prints one partition per line as Key=Value pairs, every
// partition: without -a (--all) scontrol leaves out partitions that are
// Hidden and those whose AllowGroups leave out the caller (scontrol(1),
// 22.05).
func PartitionsArgv() []string { return []string{"scontrol", "-a", "-o", "show", "partition"} }

// ConfigArgv prints the controller's configuration as "Key = Value" lines.
func ConfigArgv() []string { return []string{"scontrol", "show", "config"} }

// ParsePartitions parses PartitionsArgv's output. PartitionName, Nodes,
// MaxTime, State, Default and PriorityTier must be present; a line with a
// missing or bad one is dropped with an error.
func ParsePartitions(r io.Reader) ([]cluster.Partition, []error) {
	var (
		parts []cluster.Partition
		errs  []error
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20) // Nodes= of a big cluster is one long line
	n := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		n++
		p, err := parsePartition(line)
		if err != nil {
			errs = append(errs, fmt.Errorf("partitions record %d: %w", n, err))
			continue
		}
		parts = append(parts, p)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("partitions: read: %w", err))
	}
	return parts, errs
}

func parsePartition(line string) (cluster.Partition, error) {
	kv := make(map[string]string)
	for _, tok := range strings.Fields(line) {
		// A token without "=" would be the rest of a value with a space;
		// none of the keys read here has one.
		if k, v, ok := strings.Cut(tok, "="); ok {
			if _, dup := kv[k]; !dup {
				kv[k] = v
			}
		}
	}
	var p cluster.Partition
	for _, k := range []string{"PartitionName", "Nodes", "MaxTime", "State", "Default", "PriorityTier"} {
		if _, ok := kv[k]; !ok {
			return p, fmt.Errorf("field %s: missing", k)
		}
	}
	bad := func(k, what string) error { return fmt.Errorf("field %s: bad %s %s", k, what, quote(kv[k])) }
	if p.Name = kv["PartitionName"]; p.Name == "" {
		return p, bad("PartitionName", "name")
	}
	var err error
	if kv["Nodes"] != "(null)" {
		if p.Nodes, err = ExpandHostlist(kv["Nodes"]); err != nil {
			return p, fmt.Errorf("field Nodes: %w", err)
		}
	}
	if p.MaxTime, err = ParseTimeLimit(kv["MaxTime"]); err != nil {
		return p, fmt.Errorf("field MaxTime: %w", err)
	}
	if d := kv["DefaultTime"]; d != "" && d != "NONE" {
		if p.DefaultTime, err = ParseTimeLimit(d); err != nil {
			return p, fmt.Errorf("field DefaultTime: %w", err)
		}
	}
	tier, ok := parseDigits(kv["PriorityTier"], 5) // uint16 in Slurm
	if !ok {
		return p, bad("PriorityTier", "number")
	}
	p.PriorityTier = int(tier)
	switch kv["Default"] {
	case "YES":
		p.Default = true
	case "NO":
	default:
		return p, bad("Default", "flag")
	}
	if !isUpperName(kv["State"]) {
		return p, bad("State", "state")
	}
	p.Up = kv["State"] == "UP"
	p.OverSubscribe = kv["OverSubscribe"]
	return p, nil
}

// Defaults of the settings read by ParseConfig (slurm.conf(5), 22.05).
const (
	defaultBfInterval   = 30 * time.Second
	defaultBfResolution = 60 * time.Second
	defaultBfWindow     = 1440 * time.Minute
)

// ParseConfig parses ConfigArgv's output. It always returns a config with
// Slurm's defaults where a value is missing or bad, and an error listing
// every missing or bad value.
func ParseConfig(r io.Reader) (cluster.SchedConfig, error) {
	cfg := cluster.SchedConfig{
		BackfillInterval:   defaultBfInterval,
		BackfillResolution: defaultBfResolution,
		BackfillWindow:     defaultBfWindow,
		KillWait:           30 * time.Second,
		MinJobAge:          300 * time.Second,
		MessageTimeout:     10 * time.Second,
	}
	kv := make(map[string]string)
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		// Later sections (cgroup, MPI, ...) repeat the format: the first
		// occurrence of a key is the slurm.conf one.
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			k = strings.TrimSpace(k)
			if _, dup := kv[k]; !dup && k != "" {
				kv[k] = strings.TrimSpace(v)
			}
		}
	}
	var errs []error
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("config: read: %w", err))
	}
	str := func(k string, dst *string) {
		v, ok := kv[k]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("config: field %s: missing", k))
		case v == "":
			errs = append(errs, fmt.Errorf("config: field %s: empty", k))
		default:
			*dst = v
		}
	}
	dur := func(k string, unit time.Duration, dst *time.Duration) {
		v, ok := kv[k]
		if !ok {
			errs = append(errs, fmt.Errorf("config: field %s: missing", k))
			return
		}
		d, err := confDuration(v, unit)
		if err != nil {
			errs = append(errs, fmt.Errorf("config: field %s: %w", k, err))
			return
		}
		*dst = d
	}
	str("SLURM_VERSION", &cfg.Version)
	str("SchedulerType", &cfg.SchedulerType)
	str("SelectType", &cfg.SelectType)
	dur("KillWait", time.Second, &cfg.KillWait)
	dur("OverTimeLimit", time.Minute, &cfg.OverTimeLimit)
	dur("MinJobAge", time.Second, &cfg.MinJobAge)
	dur("MessageTimeout", time.Second, &cfg.MessageTimeout)
	if v := kv["SchedulerParameters"]; v != "" && v != "(null)" {
		for _, opt := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(opt, "=")
			var dst *time.Duration
			unit := time.Second
			switch k {
			case "bf_interval":
				dst = &cfg.BackfillInterval
				if val == "-1" { // 23.02+: backfill disabled; 0 says so
					cfg.BackfillInterval = 0
					continue
				}
			case "bf_resolution":
				dst = &cfg.BackfillResolution
			case "bf_window":
				dst, unit = &cfg.BackfillWindow, time.Minute
			default:
				continue
			}
			n, ok := parseDigits(val, 9)
			if !ok || n > math.MaxInt64/int64(unit) {
				errs = append(errs, fmt.Errorf("config: field SchedulerParameters: bad %s %s", k, quote(val)))
				continue
			}
			*dst = time.Duration(n) * unit
		}
	}
	return cfg, errors.Join(errs...)
}

// confDuration parses "5 sec", "0 min", a bare number in unit, NONE (0) or
// UNLIMITED / INFINITE.
func confDuration(v string, unit time.Duration) (time.Duration, error) {
	switch v {
	case "NONE":
		return 0, nil
	case "UNLIMITED", "INFINITE":
		return cluster.Unlimited, nil
	}
	num, suffix, _ := strings.Cut(v, " ")
	switch suffix {
	case "":
	case "sec":
		unit = time.Second
	case "min":
		unit = time.Minute
	default:
		return 0, fmt.Errorf("bad duration %s", quote(v))
	}
	n, ok := parseDigits(num, 9)
	if !ok || n > math.MaxInt64/int64(unit) {
		return 0, fmt.Errorf("bad duration %s", quote(v))
	}
	return time.Duration(n) * unit, nil
}
