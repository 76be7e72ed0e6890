// Command rawclient sends its standard input, as it is, to the unix socket
// named by its argument and prints the answer: tests/submit runs it as
// other users to speak to glean-helper the way a hostile or broken client
// would. Exit code 2: the socket could not be reached.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: rawclient SOCKET < request")
		os.Exit(2)
	}
	c, err := net.Dial("unix", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(90 * time.Second))
	// A helper that refuses an oversized request answers and closes
	// before it is all written: report the write error, read the answer.
	if _, err := io.Copy(c, os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "writing:", err)
	}
	_ = c.(*net.UnixConn).CloseWrite()
	// Linux resets a unix socket closed with unread data: the answer
	// before the reset counts.
	answer, err := io.ReadAll(c)
	os.Stdout.Write(answer)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading:", err)
		if len(answer) == 0 {
			os.Exit(1)
		}
	}
}
