package spool

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Where openat2 is refused, by a seccomp filter (EPERM) or an old kernel
// (ENOSYS), the daemon's reads go on through openat, and MountGuard says
// that mounts are not refused. Each case runs in a child process of the
// test binary, the filter being the child's for good.
func TestOpenat2Refused(t *testing.T) {
	if errno := os.Getenv("GLEAN_TEST_REFUSE_OPENAT2"); errno != "" {
		refusedChild(t, errno)
		return
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("the seccomp filter is written for amd64")
	}
	for _, errno := range []string{"EPERM", "ENOSYS"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestOpenat2Refused$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "GLEAN_TEST_REFUSE_OPENAT2="+errno)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestOpenat2Refused") {
			t.Errorf("openat2 refused with %s: %v\n%s", errno, err, out)
		}
	}
}

func refusedChild(t *testing.T, errno string) {
	e := map[string]syscall.Errno{"EPERM": unix.EPERM, "ENOSYS": unix.ENOSYS}[errno]
	if err := refuseOpenat2(e); err != nil {
		t.Fatalf("seccomp: %v", err)
	}
	if _, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH}); !errors.Is(err, e) {
		t.Fatalf("openat2 under the filter: %v, want %v", err, e)
	}
	sp, uid, id, w := newWork(t)
	if _, err := w.Take([]int{0}, Lease{Attempt: "a", Pilot: "7"}); err != nil {
		t.Fatal(err)
	}
	ws, err := sp.ScanWork(uid, id)
	if err != nil || len(ws.Leases) != 1 || ws.Leases[0].Lease.Attempt != "a" || ws.Leases[0].Heartbeat.IsZero() || len(ws.Problems) != 0 {
		t.Errorf("ScanWork through openat: %+v, %v", ws, err)
	}
	if _, problems := sp.ScanIncoming(); len(problems) != 0 {
		t.Errorf("ScanIncoming through openat: %v", problems)
	}
	if err := sp.MountGuard(); err == nil || !errors.Is(err, e) || !strings.Contains(err.Error(), "openat2 unavailable") {
		t.Errorf("MountGuard: %v, want openat2 unavailable (%v)", err, e)
	}
	if got := noOpenat2.Load(); got != (e == unix.ENOSYS) {
		t.Errorf("openat2 given up for good: %v, want %v (only for ENOSYS)", got, e == unix.ENOSYS)
	}
}

// refuseOpenat2 installs, for every thread of the process, a seccomp
// filter that fails openat2 with errno (as some container runtimes do).
func refuseOpenat2(errno syscall.Errno) error {
	const (
		ldAbs, jeq, ret  = 0x20, 0x15, 0x06 // BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K
		archX8664        = 0xc000003e       // AUDIT_ARCH_X86_64
		retAllow, retErr = 0x7fff0000, 0x00050000
	)
	filter := []unix.SockFilter{
		{Code: ldAbs, K: 4}, // seccomp_data.arch
		{Code: jeq, Jt: 0, Jf: 3, K: archX8664},
		{Code: ldAbs, K: 0}, // seccomp_data.nr
		{Code: jeq, Jt: 0, Jf: 1, K: unix.SYS_OPENAT2},
		{Code: ret, K: retErr | uint32(errno)},
		{Code: ret, K: retAllow},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	const setModeFilter, flagTsync = 1, 1 // SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, setModeFilter, flagTsync, uintptr(unsafe.Pointer(&prog))); e != 0 {
		return e
	}
	return nil
}
