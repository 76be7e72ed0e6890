package privhelper

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Modes of the socket's directory (root:group) and of the socket.
const (
	DirMode    = 0o750
	SocketMode = 0o660
)

// Doer handles one valid request (Handler in production). jobs are the
// new pilots of submit-pilots (with an error too when some failed).
type Doer interface {
	Handle(ctx context.Context, req Request) (jobs []string, err error)
}

var _ Doer = (*Handler)(nil)

// Server serves requests on a unix socket. Only a peer whose SO_PEERCRED
// uid is DaemonUID is heard; the socket's directory and the socket itself
// are reachable only by root and group GID as a second fence.
type Server struct {
	Socket    string
	DaemonUID int
	GID       int           // group of the socket and its directory (the daemon's)
	Timeout   time.Duration // per connection: reading, checking, acting, answering
	Do        Doer
	Log       *slog.Logger
	// Reload, if set, asks for a reload (SIGHUP: `systemctl reload
	// glean-helper`). Check (the start's own checks of the configuration
	// file) runs first: a file that fails is logged and the server runs
	// on; one that passes stops it (no new connection, the requests under
	// way answered) and Serve returns ErrReload for the caller to
	// re-execute, as gleand reloads. Its default would have ended the
	// helper, for good under Restart=on-failure (a HUP is a clean end).
	Reload <-chan os.Signal
	Check  func() error
}

// ErrReload: Serve stopped for a reload whose file checked out.
var ErrReload = errors.New("reload: re-execute")

// maxConns bounds the requests handled at once.
const maxConns = 4

// Listen creates the socket's directory if missing (mode 0750, owner the
// caller, group GID), refuses one that is a symlink or owned by someone
// else, removes a stale socket, and listens (mode 0660, group GID).
func (s *Server) Listen() (*net.UnixListener, error) {
	dir := filepath.Dir(s.Socket)
	if err := os.Mkdir(dir, DirMode); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("helper socket directory: %w", err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("helper socket directory: %w", err)
	}
	sys, _ := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || sys == nil || int(sys.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("helper socket directory %s: not a directory owned by uid %d (a symlink, or someone else's)", dir, os.Geteuid())
	}
	if err := os.Lchown(dir, -1, s.GID); err != nil {
		return nil, fmt.Errorf("helper socket directory: %w", err)
	}
	if err := os.Chmod(dir, DirMode); err != nil {
		return nil, fmt.Errorf("helper socket directory: %w", err)
	}
	if st, err := os.Lstat(s.Socket); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("helper socket %s exists and is not a socket", s.Socket)
		}
		if err := os.Remove(s.Socket); err != nil {
			return nil, fmt.Errorf("removing a stale helper socket: %w", err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: s.Socket, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("helper socket: %w", err)
	}
	if err := os.Lchown(s.Socket, -1, s.GID); err == nil {
		err = os.Chmod(s.Socket, SocketMode)
	}
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("helper socket: %w", err)
	}
	return ln, nil
}

// Serve answers connections on ln until ctx is done, then waits for the
// requests under way.
func (s *Server) Serve(ctx context.Context, ln *net.UnixListener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var reloading atomic.Bool
	if s.Reload != nil {
		served := make(chan struct{})
		defer close(served)
		go s.awaitReload(ctx, served, ln, &reloading)
	}
	sem := make(chan struct{}, maxConns)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if reloading.Load() {
				return ErrReload
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("helper socket: %w", err)
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			s.serveConn(ctx, c)
		}()
	}
}

// awaitReload handles Reload's requests until Serve ends; on one whose
// file checks out it closes ln, which ends Serve's loop.
func (s *Server) awaitReload(ctx context.Context, served <-chan struct{}, ln *net.UnixListener, reloading *atomic.Bool) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-served:
			return
		case <-s.Reload:
		}
		if err := s.check(); err != nil {
			s.Log.Error("config reload refused: running on with the old config", "err", oneLine(err.Error()))
			continue
		}
		s.Log.Info("config reload: the file is valid; finishing the requests under way, then re-executing")
		reloading.Store(true)
		ln.Close()
		return
	}
}

// check runs Check (none: the file passes).
func (s *Server) check() error {
	if s.Check == nil {
		return nil
	}
	return s.Check()
}

// serveConn answers one request.
func (s *Server) serveConn(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_ = c.SetDeadline(time.Now().Add(timeout))

	uid, pid, err := peer(c)
	log := s.Log.With("peer_uid", uid, "peer_pid", pid)
	if err != nil {
		log.Warn("refused: no peer credentials", "err", err)
		answer(c, &Refusal{Reason: "no peer credentials"})
		return
	}
	if uid != s.DaemonUID {
		reason := fmt.Sprintf("uid %d is not the daemon's user (uid %d)", uid, s.DaemonUID)
		log.Warn("refused", "reason", reason)
		// Read (and ignore) the request first, so that the client is not
		// reset before it can read the answer.
		_, _ = readLine(c, MaxRequestBytes)
		answer(c, &Refusal{Reason: reason})
		return
	}
	line, err := readLine(c, MaxRequestBytes)
	if err != nil {
		err = refuse("malformed request: %s", oneLine(err.Error()))
		log.Warn("refused", "reason", err)
		answer(c, err)
		return
	}
	req, err := DecodeRequest(line)
	var jobs []string
	if err == nil {
		log = log.With("op", req.Op, "job", req.Job, "record", req.Record)
		jobs, err = s.Do.Handle(ctx, req)
	}
	switch {
	case err == nil && len(jobs) > 0:
		log.Info("done", "new_jobs", jobs)
	case err == nil:
		log.Info("done")
	case IsRefusal(err):
		log.Warn("refused", "reason", err)
	default:
		log.Error("failed", "err", err)
	}
	answerJobs(c, jobs, err)
}

// peer returns the connecting process's uid and pid (SO_PEERCRED: the
// kernel's word, taken when it connected).
func peer(c *net.UnixConn) (uid, pid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return -1, 0, err
	}
	if cerr != nil {
		return -1, 0, cerr
	}
	return int(cred.Uid), int(cred.Pid), nil
}

// readLine reads one newline-terminated line of at most max bytes
// (newline included) and returns it without the newline.
func readLine(r io.Reader, max int) ([]byte, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, int64(max)), max)
	line, err := br.ReadSlice('\n')
	switch {
	case err == nil:
		return line[:len(line)-1], nil
	case errors.Is(err, bufio.ErrBufferFull) || len(line) >= max:
		return nil, fmt.Errorf("over %d bytes", max)
	case errors.Is(err, io.EOF):
		return nil, errors.New("no newline at its end")
	default:
		return nil, err
	}
}

// answer writes the response to err (nil: done).
func answer(w io.Writer, err error) { answerJobs(w, nil, err) }

// answerJobs writes the response, with new jobs' ids.
func answerJobs(w io.Writer, jobs []string, err error) {
	resp := Response{OK: err == nil, Jobs: jobs}
	if err != nil {
		resp.Refused = IsRefusal(err)
		resp.Error = oneLine(err.Error())
	}
	data, _ := json.Marshal(resp)
	_, _ = w.Write(append(data, '\n'))
}
