package pullcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// Command is the [Checker] that runs the pullcheck binary for each check:
//
//	PATH check --format json ARGS... [--namespace NS] [--pods-template NAME |
//	    --pods-template-file FILE] [--include-on-start] [--platform P]
//	    [--runtime R] [--placeholder-image REF] [--named-image NAME=REF=POLICY]...
//	    [--deadline D] --build -
//
// with the build JSON on its standard input (read as a compiled build, so that
// its errors name the container and field, never a line and column in the
// package's own encoding of the build), and an environment of the allowed
// variables only (see [Command.Env]). Exit codes 0, 1 and 3 give a report
// (its ExitCode); 2 is a *[StatusError] with the binary's standard error as the
// message. Its fields may be set before the first Check; a Command is safe for
// concurrent use after that.
type Command struct {
	// Path is the pullcheck binary.
	Path string
	// Args go after `check --format json`: the node's options, such as
	// "--docker-config", "/etc/pullcheck/docker" or "--kubeconfig", "...".
	Args []string
	// Env is the binary's whole environment ("NAME=value" entries), used as given
	// when not nil. nil: the worker's variables that [DefaultEnv] and PassEnv name,
	// and no other, so that the worker's own secrets (VELA_SERVER_SECRET, the
	// queue's and the database's credentials) never reach the binary.
	Env []string
	// PassEnv names more of the worker's variables to pass when Env is nil, beside
	// [DefaultEnv]: a name, or a prefix ending in "*" (such as "AWS_*" for a
	// credential helper of the node's Docker config).
	PassEnv []string
	// MaxAnswer bounds the standard output in bytes; 0: 64 MiB.
	MaxAnswer int64
}

// DefaultEnv names the worker's environment variables a [Command] passes to the
// binary when its Env is nil: what pullcheck, its credential helpers and the
// Kubernetes client read. A name, or a prefix ending in "*". Extend it per Command
// with [Command.PassEnv].
var DefaultEnv = []string{
	"PATH", "HOME", "TMPDIR",
	// Node credentials: the Docker config directory, the containers auth file.
	"DOCKER_CONFIG", "REGISTRY_AUTH_FILE", "XDG_RUNTIME_DIR",
	// The Kubernetes client: a kubeconfig, or the in-cluster service.
	"KUBECONFIG", "KUBERNETES_SERVICE_*",
	// pullcheck's log filter.
	"PULLCHECK_LOG",
	// Proxies, in both spellings.
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
}

// environment is the binary's environment for the worker's environ: c.Env when
// set, else the variables that DefaultEnv and c.PassEnv allow, in environ's order.
func (c *Command) environment(environ []string) []string {
	if c.Env != nil {
		return c.Env
	}
	allowed := func(name string) bool {
		for _, list := range [][]string{DefaultEnv, c.PassEnv} {
			for _, pattern := range list {
				if strings.HasSuffix(pattern, "*") {
					if strings.HasPrefix(name, strings.TrimSuffix(pattern, "*")) {
						return true
					}
				} else if name == pattern {
					return true
				}
			}
		}
		return false
	}
	out := []string{}
	for _, kv := range environ {
		if name, _, ok := strings.Cut(kv, "="); ok && name != "" && allowed(name) {
			out = append(out, kv)
		}
	}
	return out
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
	for _, image := range req.Images {
		args = append(args, "--named-image", image.name()+"="+image.Reference+"="+image.policy())
	}
	if req.Deadline > 0 {
		ms := req.Deadline.Milliseconds()
		if ms < 1 {
			ms = 1
		}
		args = append(args, "--deadline", fmt.Sprintf("%dms", ms))
	}
	return append(args, "--build", "-")
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
	if err := checkTemplate(req); err != nil {
		return nil, err
	}
	build, err := buildJSON(req.Build)
	if err != nil {
		return nil, err
	}
	if err := checkImages(req.Images); err != nil {
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
	cmd.Env = c.environment(os.Environ())
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
			cleanLines(stderrMessage(stderr.buf.String())))
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
