package pullcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// Command is the [Checker] that runs the pullcheck binary for each check:
//
//	PATH check --format json ARGS... [--namespace NS] [--pods-template NAME |
//	    --pods-template-file FILE] [--include-on-start] [--platform P]
//	    [--deadline D] -
//
// with the build JSON on its standard input. Exit codes 0, 1 and 3 give a report
// (its ExitCode); 2 is a *[StatusError] with the binary's standard error as the
// message. Its fields may be set before the first Check; a Command is safe for
// concurrent use after that.
type Command struct {
	// Path is the pullcheck binary.
	Path string
	// Args go after `check --format json`: the node's options, such as
	// "--docker-config", "/etc/pullcheck/docker" or "--kubeconfig", "...".
	Args []string
	// Env is the binary's environment; nil: the worker's.
	Env []string
	// MaxAnswer bounds the standard output in bytes; 0: 64 MiB.
	MaxAnswer int64
}

// NewCommand returns a Command that runs the pullcheck binary at path, with args
// after `check --format json` (credentials, mirrors, kubeconfig: the options of
// `pullcheck check`).
func NewCommand(path string, args ...string) *Command {
	return &Command{Path: path, Args: append([]string(nil), args...)}
}

// commandArgs is the binary's command line for req.
func (c *Command) commandArgs(req CheckRequest) []string {
	args := append([]string{"check", "--format", "json"}, c.Args...)
	if req.Namespace != "" {
		args = append(args, "--namespace", req.Namespace)
	}
	if req.PodsTemplate != "" {
		args = append(args, "--pods-template", req.PodsTemplate)
	}
	if req.PodsTemplateFile != "" {
		args = append(args, "--pods-template-file", req.PodsTemplateFile)
	}
	if req.IncludeOnStart {
		args = append(args, "--include-on-start")
	}
	if req.Platform != "" {
		args = append(args, "--platform", req.Platform)
	}
	if req.Runtime != "" {
		args = append(args, "--runtime", req.Runtime)
	}
	if req.PlaceholderImage != "" {
		args = append(args, "--placeholder-image", req.PlaceholderImage)
	}
	if req.Deadline > 0 {
		ms := req.Deadline.Milliseconds()
		if ms < 1 {
			ms = 1
		}
		args = append(args, "--deadline", fmt.Sprintf("%dms", ms))
	}
	return append(args, "-")
}

// limitedBuffer keeps the first max bytes written and counts the rest.
type limitedBuffer struct {
	buf  bytes.Buffer
	max  int64
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	room := b.max - int64(b.buf.Len())
	if int64(len(p)) > room {
		b.over = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// Check runs the binary on the build and returns its report. Errors: see
// [Checker]; the binary missing or not executable is [ErrUnavailable].
func (c *Command) Check(ctx context.Context, req CheckRequest) (*Report, error) {
	build, err := buildJSON(req.Build)
	if err != nil {
		return nil, err
	}
	if c.Path == "" {
		return nil, newError(ErrInvalidRequest, nil, "no pullcheck binary given")
	}
	limit := c.MaxAnswer
	if limit <= 0 {
		limit = 64 << 20
	}
	stdout := &limitedBuffer{max: limit}
	stderr := &limitedBuffer{max: 64 << 10}
	if ctx.Err() != nil {
		return nil, contextError(ctx, "before running "+c.Path)
	}
	cmd := exec.Command(c.Path, c.commandArgs(req)...)
	cmd.Env = c.Env
	cmd.Stdin = bytes.NewReader(build)
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	// Its own process group, so that a deadline kills everything it started
	// (a wrapper script's children too), and Wait does not hang on their pipes.
	ownProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		// Not started: missing, not executable.
		return nil, newError(ErrUnavailable, err, "running %s", c.Path)
	}
	done := make(chan struct{})
	killed := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			killProcessGroup(cmd)
			close(killed)
		case <-done:
		}
	}()
	err = cmd.Wait()
	close(done)
	select {
	case <-killed:
		return nil, contextError(ctx, "running "+c.Path)
	default:
	}
	code := 0
	if err != nil {
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			return nil, newError(ErrInvalidAnswer, err, "waiting for %s", c.Path)
		}
		code = exitErr.ExitCode()
	}
	switch code {
	case 0, 1, 3:
		if stdout.over {
			return nil, newError(ErrInvalidAnswer, nil, "the report of %s is over %d bytes", c.Path, limit)
		}
		report, err := decodeReport(stdout.buf.Bytes(), c.Path)
		if err != nil {
			return nil, err
		}
		report.ExitCode = code
		return report, nil
	case 2:
		return nil, &StatusError{ExitCode: code, Message: stderrMessage(stderr.buf.String())}
	case -1:
		return nil, newError(ErrInvalidAnswer, nil, "%s ended by a signal (%v)", c.Path, err)
	default:
		return nil, newError(ErrInvalidAnswer, nil, "%s exited with %d: %s", c.Path, code,
			clean(stderrMessage(stderr.buf.String())))
	}
}

// stderrMessage is the binary's standard error as one message: trimmed, with
// pullcheck's "error: " prefix removed.
func stderrMessage(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "error: ")
	return s
}

var _ Checker = (*Command)(nil)

var _ io.Writer = (*limitedBuffer)(nil)
