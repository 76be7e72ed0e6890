package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/glean-hpc/glean/sidecar/config"
	"github.com/glean-hpc/glean/sidecar/submit"
)

// Sbatch is `glean sbatch ARGS`: the drop-in sbatch (docs/submission.md)
// run directly, without the wrapper script.
func Sbatch(ctx context.Context, args []string, _, _ io.Writer) int {
	return sbatch(ctx, "", args)
}

// SbatchWrapper is what the first line of wrappers/sbatch runs: the kernel
// passes the wrapper's own path, then the user's arguments.
func SbatchWrapper(ctx context.Context, args []string, _, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "glean: %s is run by the first line of wrappers/sbatch, with its path\n", submit.WrapperCommand)
		return 2
	}
	return sbatch(ctx, args[0], args[1:])
}

// sbatch works on the process's own standard streams, whatever stdout and
// stderr it is given, because a submission that is not elastic is handed
// to the real sbatch with the very same descriptors (or replaced by it).
func sbatch(ctx context.Context, self string, args []string) int {
	cwd, err := os.Getwd()
	if err != nil {
		cwd = "/"
	}
	uid := os.Getuid()
	agent := "glean-agent"
	if exe, err := os.Executable(); err == nil {
		agent = filepath.Join(filepath.Dir(exe), "glean-agent")
	}
	w := &submit.Wrapper{
		Args: args, Env: os.Environ(), RawEnv: rawEnviron(), Self: self,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Cwd: cwd, UID: uid, Now: time.Now(),
		LoadConfig: func() (config.Config, error) { return config.Load(config.Path()) },
		Agent:      agent,
	}
	return w.Main(ctx)
}

// rawEnviron is the environment exactly as this process was started with
// it, or nil if /proc cannot tell. os.Environ drops entries whose key
// repeats an earlier one; the real sbatch must get those too.
func rawEnviron() []string {
	data, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		return nil
	}
	env := []string{}
	if len(data) == 0 {
		return env
	}
	for _, kv := range bytes.Split(bytes.TrimSuffix(data, []byte{0}), []byte{0}) {
		env = append(env, string(kv))
	}
	return env
}
