// Package sdnotifytest is systemd's side of sd_notify(3) for tests: a
// datagram socket to point $NOTIFY_SOCKET at, and the messages sent to it.
package sdnotifytest

import (
	"net"
	"os"
	"testing"
	"time"
)

// Message is one datagram (one or more states, newline-separated) and when
// it arrived.
type Message struct {
	At   time.Time
	Text string
}

// Listen binds a datagram socket at path, writable by anyone (the daemon
// may run as another user), closed at the test's end. The channel is
// closed when the socket is.
func Listen(tb testing.TB, path string) <-chan Message {
	tb.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	if err := os.Chmod(path, 0o666); err != nil {
		tb.Fatal(err)
	}
	out := make(chan Message, 4096)
	go func() {
		defer close(out)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			out <- Message{time.Now(), string(buf[:n])}
		}
	}()
	return out
}
