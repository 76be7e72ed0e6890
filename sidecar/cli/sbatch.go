package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/glean-hpc/glean/sidecar/config"
	"github.com/glean-hpc/glean/sidecar/submit"
)

// Sbatch is `glean sbatch ARGS`, what wrappers/sbatch runs: the drop-in
// sbatch (docs/submission.md). It works on the process's own standard
// streams, whatever stdout and stderr it is given, because a submission
// that is not elastic is handed to the real sbatch with the very same
// descriptors (or replaced by it).
func Sbatch(ctx context.Context, args []string, _, _ io.Writer) int {
	cwd, err := os.Getwd()
	if err != nil {
		cwd = "/"
	}
	uid := os.Getuid()
	agent := "glean-agent"
	if exe, err := os.Executable(); err == nil {
		agent = filepath.Join(filepath.Dir(exe), "glean-agent")
	}
	env := os.Environ()
	// The marker is for this process only: the Slurm commands run for the
	// anchor inherit os.Environ, and a job must not see it.
	os.Unsetenv(submit.WrapperEnv)
	w := &submit.Wrapper{
		Args: args, Env: env,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Cwd: cwd, UID: uid, Now: time.Now(),
		LoadConfig: func() (config.Config, error) { return config.Load(config.Path()) },
		Agent:      agent,
	}
	return w.Main(ctx)
}
