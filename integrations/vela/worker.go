package pullcheck

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// WorkerConfig is what a Vela worker is started with for the image check: its own
// flags (the patch in integrations/vela/worker names them executor.image-check-*)
// and the runtime's and executor's settings the check needs.
type WorkerConfig struct {
	// URL is the `pullcheck serve` to ask, such as "https://pullcheck.vela.svc:8080"
	// (executor.image-check-url). Either URL or Binary; neither: no check.
	URL string
	// Token is the service's bearer token (executor.image-check-token).
	Token string
	// Binary is the pullcheck binary to run instead of a service
	// (executor.image-check-binary), with BinaryArgs after `check --format json`.
	Binary     string
	BinaryArgs []string
	// Timeout bounds one check, the Kubernetes lookups included
	// (executor.image-check-timeout). 0: 30 s.
	Timeout time.Duration
	// FailOpen lets a build go on with a warning when pullcheck cannot answer
	// (executor.image-check-fail-open). A failed image fails the build either way.
	FailOpen bool
	// RuntimeDriver is the worker's runtime.driver: the check runs on "kubernetes"
	// only, since the Docker runtime pulls every image in its own AssembleBuild.
	RuntimeDriver string
	// Namespace, PodsTemplate and PodsTemplateFile are the runtime's
	// runtime.namespace, runtime.pods-template-name and runtime.pods-template-file.
	Namespace, PodsTemplate, PodsTemplateFile string
	// OutputsImage is executor.outputs-image: the outputs container runs in the
	// build Pod and is pulled first, but it is not part of the build, so it is
	// added to every check (pull policy not_present, as the worker sets it).
	OutputsImage string
	// PlaceholderImage is the runtime's placeholder image; empty: pullcheck's
	// default, docker.io/kubernetes/pause:latest (go-vela/worker's).
	PlaceholderImage string
}

// String prints the configuration with the service's URL redacted and Token
// replaced by "[redacted]" when set, so that %v, %+v and %s of a config (a worker's
// start-up log) never print the bearer token.
func (c WorkerConfig) String() string {
	type plain WorkerConfig // no methods: formatting it does not call String again
	shown := plain(c)
	shown.URL = redact(c.URL)
	if shown.Token != "" {
		shown.Token = "[redacted]"
	}
	return fmt.Sprintf("%+v", shown)
}

// GoString is String, so that %#v does not print the token either.
func (c WorkerConfig) GoString() string { return c.String() }

// WorkerCheck is the image check of a Vela worker: built once at start from a
// [WorkerConfig] ([NewWorkerCheck]), shared by every build, and run by the
// executor's AssembleBuild just before the runtime's AssembleBuild ([WorkerCheck.Run]).
type WorkerCheck struct {
	checker Checker
	request CheckRequest
	timeout time.Duration
}

// NewWorkerCheck builds the check once, at the worker's start. It returns nil and
// no error when neither URL nor Binary is set (the check is off); a nil
// *WorkerCheck's Run does nothing.
//
// Errors wrap [ErrInvalidRequest]: both URL and Binary set, a URL that is not
// http(s), a check asked for on a runtime other than kubernetes, or
// PodsTemplateFile with URL (the service reads no file of the caller).
func NewWorkerCheck(cfg WorkerConfig) (*WorkerCheck, error) {
	if cfg.URL == "" && cfg.Binary == "" {
		return nil, nil
	}
	if cfg.URL != "" && cfg.Binary != "" {
		return nil, newError(ErrInvalidRequest, nil, "give the image check a service URL or a binary, not both")
	}
	if cfg.RuntimeDriver != "kubernetes" {
		return nil, newError(ErrInvalidRequest, nil,
			"the image check runs on the kubernetes runtime only (runtime.driver is %s, whose AssembleBuild pulls every image itself)",
			quote(cfg.RuntimeDriver))
	}
	var checker Checker
	if cfg.URL != "" {
		if cfg.PodsTemplateFile != "" {
			return nil, newError(ErrInvalidRequest, nil,
				"the service reads no file of the worker: use runtime.pods-template-name, or the binary, with a pods template file")
		}
		client := NewClient(cfg.URL, cfg.Token)
		if _, err := client.endpoint(); err != nil {
			return nil, err
		}
		checker = client
	} else {
		checker = NewCommand(cfg.Binary, cfg.BinaryArgs...)
	}
	if cfg.FailOpen {
		checker = FailOpen(checker)
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	req := CheckRequest{
		FileName:         "build",
		Namespace:        cfg.Namespace,
		PodsTemplate:     cfg.PodsTemplate,
		PodsTemplateFile: cfg.PodsTemplateFile,
		Runtime:          "kubernetes",
		PlaceholderImage: cfg.PlaceholderImage,
		// pullcheck's own deadline a little inside the context's, so that a slow
		// registry is an unreachable row rather than an abandoned check.
		Deadline: timeout * 9 / 10,
	}
	if cfg.OutputsImage != "" {
		req.Images = []ExtraImage{{Reference: cfg.OutputsImage, Policy: "not_present", Name: "outputs"}}
	}
	if err := checkImages(req.Images); err != nil {
		return nil, err
	}
	return &WorkerCheck{checker: checker, request: req, timeout: timeout}, nil
}

// Log is where [WorkerCheck.Run] writes: the init step's log (go-vela/server's
// *api.Log has this method).
type Log interface {
	AppendData(data []byte)
}

// MaxBuildError is the length, in bytes, to which the Vela server cuts a build's
// error; [WorkerCheck.Run]'s error stays within it, and the full list goes to the
// init step's log.
const MaxBuildError = 1000

// WorkerCheckError is the error of [WorkerCheck.Run]: its message is short enough
// for the build's error (at most [MaxBuildError] bytes), and it wraps the whole
// error (a *[FailedError] for failed images, else the outage), for errors.Is and
// errors.As.
type WorkerCheckError struct {
	// Err is the whole error, as written to the init step's log.
	Err error
}

// Error names the failed images until MaxBuildError bytes, then how many more the
// init step's log lists.
func (e *WorkerCheckError) Error() string {
	var failed *FailedError
	if !errors.As(e.Err, &failed) {
		return truncate("unable to check images: "+e.Err.Error(), MaxBuildError)
	}
	head := fmt.Sprintf("%d image", len(failed.Images))
	if len(failed.Images) != 1 {
		head += "s"
	}
	head += " failed (all in the init step's log):"
	var b strings.Builder
	b.WriteString(head)
	for i, image := range failed.Images {
		item := " " + quote(image.Reference) + " (" + strings.ReplaceAll(image.Status, "_", " ")
		if image.Missing != "" {
			item += " " + image.Missing
		}
		item += ")"
		if i < len(failed.Images)-1 {
			item += ","
		}
		rest := fmt.Sprintf(" and %d more", len(failed.Images)-i)
		if b.Len()+len(item)+len(" and 9999 more") > MaxBuildError {
			b.WriteString(rest)
			break
		}
		b.WriteString(item)
	}
	return b.String()
}

// Unwrap gives the whole error.
func (e *WorkerCheckError) Unwrap() error { return e.Err }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// Run checks every image of build (the executor's *pipeline.Build, after every
// container's Substitute), the outputs image and the placeholder, within the
// configured timeout, and writes the outcome to log: "> Checking images..."
// first, then each warning, then every failed image, one per line. It returns nil
// when no image failed (with FailOpen, also when pullcheck could not answer), and
// otherwise a *[WorkerCheckError], which the executor returns from AssembleBuild
// as for any assemble error: the init step fails, the build records the error,
// DestroyBuild cleans up. A nil *WorkerCheck returns nil at once.
func (w *WorkerCheck) Run(ctx context.Context, build any, log Log) error {
	if w == nil {
		return nil
	}
	log.AppendData([]byte("> Checking images...\n"))
	req := w.request
	req.Build = build
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	report, err := w.checker.Check(ctx, req)
	if err != nil {
		log.AppendData([]byte("> pullcheck: " + cleanLines(err.Error()) + "\n"))
		return &WorkerCheckError{Err: err}
	}
	for _, warning := range report.Warnings {
		log.AppendData([]byte("> pullcheck: " + cleanLines(warning) + "\n"))
	}
	if err := report.Err(); err != nil {
		log.AppendData([]byte(err.Error() + "\n"))
		return &WorkerCheckError{Err: err}
	}
	s := report.Summary
	log.AppendData([]byte(fmt.Sprintf("> pullcheck: %d present, %d unverified, %d deferred, %d skipped\n",
		s.Present, s.Unverified, s.Deferred, s.Skipped)))
	return nil
}
