//go:build unix

package pullcheck

// Tests against the real thing: the pullcheck binary (PULLCHECK_BIN), `pullcheck
// serve`, and registries of the testkit (PULLCHECK_TESTKIT_BIN: Debian's
// docker-registry with token auth). scripts/test.sh sets both to fresh debug builds.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cleanups run after every test (the shared registry and service).
var (
	cleanupMu sync.Mutex
	cleanups  []func()
)

func atExit(f func()) {
	cleanupMu.Lock()
	defer cleanupMu.Unlock()
	cleanups = append(cleanups, f)
}

func TestMain(m *testing.M) {
	code := m.Run()
	cleanupMu.Lock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	cleanupMu.Unlock()
	os.Exit(code)
}

// binary returns the path in env var name, or skips the test (fails it under CI).
func binary(t *testing.T, name string) string {
	t.Helper()
	path := os.Getenv(name)
	if path == "" {
		msg := name + " is not set: this test needs the real binary (scripts/test.sh sets PULLCHECK_BIN and PULLCHECK_TESTKIT_BIN to fresh debug builds)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s=%s: %v", name, path, err)
	}
	return path
}

// process is a started child whose exit is watched, so that a test sees at once
// when it died.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

func startProcess(cmd *exec.Cmd) (*process, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

func (p *process) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM, waits up to 10 s, then kills.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// registry is the shared token-auth registry with the test images.
type registry struct {
	host         string // 127.0.0.1:PORT
	tokenServer  string // the token server's 127.0.0.1:PORT
	dockerConfig string // a directory with config.json holding the credentials
	err          error
}

var (
	registryOnce sync.Once
	theRegistry  registry
)

func startRegistry(t *testing.T) registry {
	t.Helper()
	testkit := binary(t, "PULLCHECK_TESTKIT_BIN")
	registryOnce.Do(func() { theRegistry = launchRegistry(testkit) })
	if theRegistry.err != nil {
		t.Fatal(theRegistry.err)
	}
	return theRegistry
}

func launchRegistry(testkit string) registry {
	dir, err := os.MkdirTemp("", "pullcheck-vela-test-")
	if err != nil {
		return registry{err: err}
	}
	atExit(func() { os.RemoveAll(dir) })
	envFile := filepath.Join(dir, "registry.env")
	log, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		return registry{err: err}
	}
	cmd := exec.Command(testkit, "serve", "--mode", "token",
		"--push", "team/app:v1",
		"--push", "library/postgres:16,docker-list",
		"--push", "vela/vault:1.4,docker",
		"--push", "team/ondemand:v2,oci-index",
		"--token-fault", "team/notoken=no-token",
		"--token-fault", "team/forbidden=403",
		"--token-fault", "team/broken=500",
		"--env-file", envFile)
	cmd.Stdout, cmd.Stderr = log, log
	proc, err := startProcess(cmd)
	if err != nil {
		return registry{err: fmt.Errorf("starting %s: %w", testkit, err)}
	}
	atExit(proc.stop)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(envFile); err == nil {
			break
		}
		if !proc.alive() || time.Now().After(deadline) {
			text, _ := os.ReadFile(log.Name())
			return registry{err: fmt.Errorf("the testkit registry did not start (exited, or not ready in 60 s): %s", text)}
		}
		time.Sleep(100 * time.Millisecond)
	}
	env := map[string]string{}
	f, err := os.Open(envFile)
	if err != nil {
		return registry{err: err}
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		if k, v, ok := strings.Cut(scanner.Text(), "="); ok {
			env[k] = v
		}
	}
	r := registry{host: env["PULLCHECK_REGISTRY"], dockerConfig: filepath.Join(dir, "docker")}
	// PULLCHECK_TOKEN_REALM is http://127.0.0.1:PORT/token.
	if realm, err := url.Parse(env["PULLCHECK_TOKEN_REALM"]); err == nil {
		r.tokenServer = realm.Host
	}
	if r.host == "" || env["PULLCHECK_REGISTRY_USER"] == "" {
		return registry{err: fmt.Errorf("%s lacks PULLCHECK_REGISTRY or the user", envFile)}
	}
	// The credentials as `docker login` stores them: never in the build.
	auth := base64.StdEncoding.EncodeToString([]byte(env["PULLCHECK_REGISTRY_USER"] + ":" + env["PULLCHECK_REGISTRY_PASSWORD"]))
	config := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, r.host, auth)
	if err := os.MkdirAll(r.dockerConfig, 0o700); err != nil {
		return registry{err: err}
	}
	if err := os.WriteFile(filepath.Join(r.dockerConfig, "config.json"), []byte(config), 0o600); err != nil {
		return registry{err: err}
	}
	return r
}

// testBuild is a compiled build as the worker holds it at AssembleBuild: the init
// stage, a present service, a present step, a typo'd tag, a missing repository, an
// on_start step, a secret origin; the SCM token and a secret value as canaries.
func testBuild(host string) *velaBuild {
	return &velaBuild{
		ID: "octocat_hello-world_7", Version: "1", Token: canaryToken, TokenExp: 1700000000,
		Environment: map[string]string{"VELA_NETRC_PASSWORD": canaryToken},
		Secrets: []*velaSecret{
			{Name: "docker_password", Value: canarySecret, Key: "octocat/docker_password", Engine: "native", Type: "repo", Pull: "build_start"},
			{Name: "vault", Origin: &velaContainer{ID: "secret_octocat_hello-world_7_vault", Name: "vault",
				Image: host + "/vela/vault:1.4", Pull: "always", Environment: map[string]string{"VAULT_TOKEN": canarySecret}}},
		},
		Services: []*velaContainer{{ID: "service_octocat_hello-world_7_postgres", Name: "postgres", Number: 1,
			Image: host + "/library/postgres:16", Pull: "not_present"}},
		Stages: []*velaStage{
			{Name: "init", Steps: []*velaContainer{{ID: "__0_init_init", Name: "init", Number: 1, Image: "#init", Pull: "not_present"}}},
			{Name: "build", Steps: []*velaContainer{
				{ID: "step_build_app", Name: "app", Number: 2, Image: host + "/team/app:v1", Pull: "always",
					Commands: []string{"make"}, Environment: map[string]string{"DOCKER_PASSWORD": canarySecret},
					Secrets: []velaStepSecret{{Source: "docker_password", Target: "docker_password"}}},
				{ID: "step_build_typo", Name: "typo", Number: 3, Image: host + "/team/app:v9", Pull: "always"},
				{ID: "step_build_gone", Name: "gone", Number: 4, Image: host + "/team/nothing:v1", Pull: "not_present"},
				{ID: "step_build_later", Name: "later", Number: 5, Image: host + "/team/ondemand:v2", Pull: "on_start"},
			}},
		},
	}
}

// statuses maps each image (without the registry host) to status[/missing].
func statuses(t *testing.T, r *Report, host string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, image := range r.Images {
		s := image.Status
		if image.Missing != "" {
			s += "/" + image.Missing
		}
		got[strings.TrimPrefix(image.Reference, host+"/")] = s
	}
	return got
}

func wantReport(t *testing.T, r *Report, host string, includeOnStart bool) {
	t.Helper()
	want := map[string]string{
		"#init":               "skipped",
		"library/postgres:16": "present",
		"team/app:v1":         "present",
		"team/app:v9":         "missing/tag",
		"team/nothing:v1":     "missing/repository",
		"team/ondemand:v2":    "deferred",
		"vela/vault:1.4":      "present",
	}
	if includeOnStart {
		want["team/ondemand:v2"] = "present"
	}
	got := statuses(t, r, host)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("statuses:\n got %v\nwant %v", got, want)
	}
	wantReasons := map[string]string{
		"#init":               ReasonInitStep,
		"library/postgres:16": ReasonFound,
		"team/app:v1":         ReasonFound,
		"team/app:v9":         ReasonTagNotFound,
		"team/nothing:v1":     ReasonRepositoryNotFound,
		"team/ondemand:v2":    ReasonDeferredOnStart,
		"vela/vault:1.4":      ReasonFound,
	}
	if includeOnStart {
		wantReasons["team/ondemand:v2"] = ReasonFound
	}
	gotReasons := map[string]string{}
	for _, image := range r.Images {
		gotReasons[strings.TrimPrefix(image.Reference, host+"/")] = image.Reason
	}
	if fmt.Sprint(gotReasons) != fmt.Sprint(wantReasons) {
		t.Errorf("reasons:\n got %v\nwant %v", gotReasons, wantReasons)
	}
	if r.ExitCode != 1 || r.Summary.Failed != 2 || r.Summary.Total != 7 {
		t.Errorf("exit code %d, summary %+v", r.ExitCode, r.Summary)
	}
	err := r.Err()
	if !errors.Is(err, ErrImagesFailed) {
		t.Fatalf("Err() = %v", err)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 || lines[0] != "pullcheck: 2 images failed:" {
		t.Fatalf("Err() lines: %q", lines)
	}
	for i, want := range []string{
		`step "typo" (stage "build"): `,
		`step "gone" (stage "build"): `,
	} {
		if !strings.HasPrefix(lines[i+1], want) {
			t.Errorf("line %d: %q, want prefix %q", i+1, lines[i+1], want)
		}
	}
	if !strings.Contains(lines[1], `image "`+host+`/team/app:v9": missing tag`) ||
		!strings.Contains(lines[2], `image "`+host+`/team/nothing:v1": missing repository`) {
		t.Errorf("Err() text:\n%s", err)
	}
	for _, image := range r.Failed() {
		o := image.Origins[0]
		if o.Line == 0 || o.Column == 0 || o.Kind != "step" || o.Stage != "build" {
			t.Errorf("%s: origin %+v", image.Reference, o)
		}
	}
}

// teeWrapper writes a script that copies its standard input to a file and runs
// the real binary on it, so that the test sees exactly what the Command sends.
func teeWrapper(t *testing.T, bin string) (script, stdin string) {
	t.Helper()
	dir := t.TempDir()
	script, stdin = filepath.Join(dir, "pullcheck-tee"), filepath.Join(dir, "stdin.json")
	text := fmt.Sprintf("#!/bin/sh\ntee %q | exec %q \"$@\"\n", stdin, bin)
	if err := os.WriteFile(script, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, stdin
}

func TestCommandChecksCompiledBuild(t *testing.T) {
	bin := binary(t, "PULLCHECK_BIN")
	reg := startRegistry(t)
	script, stdin := teeWrapper(t, bin)
	checker := NewCommand(script, "--docker-config", reg.dockerConfig)
	for _, includeOnStart := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		report, err := checker.Check(ctx, CheckRequest{Build: testBuild(reg.host), IncludeOnStart: includeOnStart})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		wantReport(t, report, reg.host, includeOnStart)
		if f := report.Failed()[0].Origins[0].File; f != "<stdin>" {
			t.Errorf("origin file %q", f)
		}
		sent, err := os.ReadFile(stdin)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(sent, []byte("/team/app:v9")) {
			t.Fatalf("the tee saw no build: %s", sent)
		}
		for _, canary := range []string{canaryToken, canarySecret} {
			if bytes.Contains(sent, []byte(canary)) {
				t.Errorf("%q reached pullcheck's stdin: %s", canary, sent)
			}
		}
	}
}

// A version warning reaches the Go caller as data: the test registry is a plain-HTTP
// loopback registry, asked as containerd's default host under an empty hosts
// directory, which containerd 1.6.0-1.6.8 would ask over HTTPS only.
func TestVersionWarningsAreData(t *testing.T) {
	bin := binary(t, "PULLCHECK_BIN")
	reg := startRegistry(t)
	hosts := t.TempDir()
	checker := NewCommand(bin, "--docker-config", reg.dockerConfig, "--hosts-dir", hosts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	report, err := checker.Check(ctx, CheckRequest{Build: testBuild(reg.host)})
	if err != nil {
		t.Fatal(err)
	}
	if len(report.VersionWarnings) != 1 {
		t.Fatalf("version warnings %+v", report.VersionWarnings)
	}
	w := report.VersionWarnings[0]
	if w.Kind != VersionWarningLoopbackDefaultHostOverPlainHTTP || w.Runtime != "containerd" ||
		w.File != hosts || w.Host != reg.host {
		t.Errorf("version warning %+v", w)
	}
	if len(w.Modelled) != 1 || w.Modelled[0].First != "1.6.9" || w.Modelled[0].Last != nil {
		t.Errorf("modelled %+v", w.Modelled)
	}
	if len(w.Differing) != 1 || w.Differing[0].First != "1.6.0" || w.Differing[0].Last == nil ||
		*w.Differing[0].Last != "1.6.8" {
		t.Errorf("differing %+v", w.Differing)
	}
	// Worded once among the warnings too.
	worded := 0
	for _, text := range report.Warnings {
		if strings.Contains(text, reg.host) && strings.Contains(text, "1.6.0-1.6.8") {
			worded++
		}
	}
	if worded != 1 {
		t.Errorf("warnings %q", report.Warnings)
	}
}

// recorder keeps every request body the Client sends.
type recorder struct {
	mu     sync.Mutex
	bodies [][]byte
	heads  []http.Header
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	r.mu.Lock()
	r.bodies = append(r.bodies, body)
	r.heads = append(r.heads, req.Header.Clone())
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

// service is one `pullcheck serve` on loopback.
type service struct {
	url, token, log string
}

const apiToken = "api-token-for-the-vela-tests"

var (
	serviceOnce sync.Once
	theService  service
	serviceErr  error
)

func startService(t *testing.T) service {
	t.Helper()
	bin := binary(t, "PULLCHECK_BIN")
	reg := startRegistry(t)
	serviceOnce.Do(func() { theService, serviceErr = launchService(bin, reg) })
	if serviceErr != nil {
		t.Fatal(serviceErr)
	}
	return theService
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func launchService(bin string, reg registry, extra ...string) (service, error) {
	dir, err := os.MkdirTemp("", "pullcheck-vela-serve-")
	if err != nil {
		return service{}, err
	}
	atExit(func() { os.RemoveAll(dir) })
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(apiToken+"\n"), 0o600); err != nil {
		return service{}, err
	}
	addr, err := freePort()
	if err != nil {
		return service{}, err
	}
	logPath := filepath.Join(dir, "serve.log")
	log, err := os.Create(logPath)
	if err != nil {
		return service{}, err
	}
	args := append([]string{"serve", "--listen", addr, "--api-token-file", tokens,
		"--docker-config", reg.dockerConfig, "-vv"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	proc, err := startProcess(cmd)
	if err != nil {
		return service{}, err
	}
	atExit(proc.stop)
	s := service{url: "http://" + addr, token: apiToken, log: logPath}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if !proc.alive() || time.Now().After(deadline) {
			text, _ := os.ReadFile(logPath)
			return service{}, fmt.Errorf("pullcheck serve did not answer /healthz (exited, or not ready in 30 s): %s", text)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestClientChecksCompiledBuild(t *testing.T) {
	svc := startService(t)
	reg := startRegistry(t)
	rec := &recorder{}
	client := NewClient(svc.url, svc.token)
	client.HTTPClient = &http.Client{Transport: rec}
	for _, includeOnStart := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		report, err := client.Check(ctx, CheckRequest{Build: testBuild(reg.host), FileName: "build.json", IncludeOnStart: includeOnStart})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		wantReport(t, report, reg.host, includeOnStart)
		if f := report.Failed()[0].Origins[0].File; f != "build.json" {
			t.Errorf("origin file %q", f)
		}
	}
	if len(rec.bodies) != 2 {
		t.Fatalf("%d requests", len(rec.bodies))
	}
	for i, body := range rec.bodies {
		for _, canary := range []string{canaryToken, canarySecret} {
			if bytes.Contains(body, []byte(canary)) {
				t.Errorf("%q sent to the service: %s", canary, body)
			}
		}
		if got := rec.heads[i].Get("Authorization"); got != "Bearer "+apiToken {
			t.Errorf("Authorization header %q", got)
		}
	}
	// The service's own log (at trace level) never saw them either.
	logText, err := os.ReadFile(svc.log)
	if err != nil {
		t.Fatal(err)
	}
	for _, canary := range []string{canaryToken, canarySecret, apiToken} {
		if bytes.Contains(logText, []byte(canary)) {
			t.Errorf("%q in the service's log", canary)
		}
	}
}

func TestClientRefusals(t *testing.T) {
	svc := startService(t)
	reg := startRegistry(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := CheckRequest{Build: testBuild(reg.host)}

	_, err := NewClient(svc.url, "not-the-token").Check(ctx, req)
	var status *StatusError
	if !errors.Is(err, ErrStatus) || !errors.As(err, &status) || status.HTTPStatus != 401 || status.Message == "" {
		t.Errorf("wrong token: %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "not-the-token") {
		t.Errorf("the token is in the error: %v", err)
	}
	if errors.Is(err, ErrUnavailable) {
		t.Errorf("401 counted as an outage: %v", err)
	}

	_, err = NewClient(svc.url, svc.token).Check(ctx, CheckRequest{Build: req.Build, PodsTemplateFile: "/etc/vela/pods.yaml"})
	if !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("PodsTemplateFile: %v", err)
	}

	// A build the worker would refuse to decode: a 400 with the typed refusal.
	bad := json.RawMessage(`{"id":"o_r_1","version":"1","steps":[{"id":"step_o_r_1_a","name":"a","image":5}]}`)
	_, err = NewClient(svc.url, svc.token).Check(ctx, CheckRequest{Build: bad})
	status = nil
	if !errors.As(err, &status) || status.HTTPStatus != 400 {
		t.Fatalf("refused build: %v", err)
	}
	want := Refusal{Kind: RefusalWrongType, Field: "steps[0].image", Expected: "string", Found: "number", JSON: true}
	if status.Refusal == nil || *status.Refusal != want {
		t.Errorf("refusal: got %+v, want %+v (%v)", status.Refusal, want, err)
	}
	// Any other 400 has none, but its kind and field.
	_, err = NewClient(svc.url, svc.token).Check(ctx, CheckRequest{Build: req.Build, Platform: "linux"})
	status = nil
	if !errors.As(err, &status) || status.HTTPStatus != 400 || status.Refusal != nil ||
		status.Kind != "platform" || status.Field != "platform" {
		t.Errorf("bad platform: %v (%+v)", err, status)
	}
	// A namespace that is no path segment of the Kubernetes API: the service's
	// invalid_name, typed.
	_, err = NewClient(svc.url, svc.token).Check(ctx, CheckRequest{Build: req.Build, Namespace: "a/b"})
	status = nil
	if !errors.As(err, &status) || status.HTTPStatus != 400 || status.Kind != "invalid_name" || status.Field != "namespace" {
		t.Errorf("bad namespace: %v (%+v)", err, status)
	}
	// A build without any image: nothing_to_check, with each input as data.
	empty := json.RawMessage(`{"id":"o_r_1","version":"1","steps":[]}`)
	_, err = NewClient(svc.url, svc.token).Check(ctx, CheckRequest{Build: empty, FileName: "b.json"})
	status = nil
	want2 := []EmptyInput{{Name: "b.json", ReadAs: "build", Held: "no_image"}}
	if !errors.As(err, &status) || status.Kind != "nothing_to_check" || status.Field != "allow_empty" ||
		len(status.Inputs) != 1 || status.Inputs[0] != want2[0] {
		t.Errorf("nothing to check: %v (%+v)", err, status)
	}
	// A pods template without a namespace: refused before anything is sent, as the
	// Command refuses it.
	_, err = NewClient(svc.url, svc.token).Check(ctx, CheckRequest{Build: req.Build, PodsTemplate: "tpl"})
	if !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("template without namespace: %v", err)
	}
}

// closedAddress is a loopback address where nothing listens.
func closedAddress(t *testing.T) string {
	t.Helper()
	addr, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func TestServiceDown(t *testing.T) {
	// Needs no binary: nothing listens there.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := CheckRequest{Build: testBuild("127.0.0.1:1")}
	client := NewClient("http://"+closedAddress(t), apiToken)
	_, err := client.Check(ctx, req)
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrStatus) || errors.Is(err, ErrDeadline) {
		t.Fatalf("service down: %v", err)
	}
	if strings.Contains(err.Error(), apiToken) {
		t.Errorf("token in the error: %v", err)
	}

	report, err := FailOpen(client).Check(ctx, req)
	if err != nil || report.ExitCode != 3 || report.Err() != nil || !errors.Is(report.Outage, ErrUnavailable) ||
		len(report.Warnings) != 1 || !strings.Contains(report.Warnings[0], "fail open") {
		t.Errorf("fail open: %+v, %v", report, err)
	}

	_, err = NewCommand(filepath.Join(t.TempDir(), "no-such-pullcheck")).Check(ctx, req)
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("no binary: %v", err)
	}

	canceled, cancelNow := context.WithCancel(context.Background())
	cancelNow()
	if _, err := FailOpen(client).Check(canceled, req); !errors.Is(err, context.Canceled) {
		t.Errorf("fail open must not hide a canceled build: %v", err)
	}
}

func TestCommandRefusalsAndBadAnswers(t *testing.T) {
	bin := binary(t, "PULLCHECK_BIN")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := CheckRequest{Build: testBuild("127.0.0.1:1")}

	// Exit code 2: a usage error, with pullcheck's message.
	_, err := NewCommand(bin, "--no-such-option").Check(ctx, req)
	var status *StatusError
	if !errors.Is(err, ErrStatus) || !errors.As(err, &status) || status.ExitCode != 2 || !strings.Contains(status.Message, "--no-such-option") {
		t.Errorf("usage error: %v", err)
	}

	// A binary that prints something else than a report.
	script := filepath.Join(t.TempDir(), "not-pullcheck")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\necho 'not json'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := NewCommand(script).Check(ctx, req); !errors.Is(err, ErrInvalidAnswer) {
		t.Errorf("not a report: %v", err)
	}

	// A pods template without a namespace: refused before the binary runs (which
	// would read the kubeconfig context's namespace), as the Client refuses it.
	_, err = NewCommand(script).Check(ctx, CheckRequest{Build: req.Build, PodsTemplate: "tpl"})
	if !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("template without namespace: %v", err)
	}
}

// hungRegistry accepts connections and never answers, as a registry behind a
// broken load balancer does.
func hungRegistry(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return l.Addr().String()
}

func hungBuild(host string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"id":"octocat_hello_8","version":"1","token":%q,
		"steps":[{"id":"step_hang","name":"hang","image":"%s/team/app:v1","pull":"always"}]}`, canaryToken, host))
}

func TestDeadlines(t *testing.T) {
	hung := hungRegistry(t)
	transports := map[string]func(t *testing.T) Checker{
		"command": func(t *testing.T) Checker { return NewCommand(binary(t, "PULLCHECK_BIN")) },
		"client": func(t *testing.T) Checker {
			svc := startService(t)
			return NewClient(svc.url, svc.token)
		},
	}
	for name, transport := range transports {
		transport := transport
		t.Run(name, func(t *testing.T) {
			checker := transport(t)
			// The context's deadline: the check is abandoned, at once.
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			start := time.Now()
			_, err := checker.Check(ctx, CheckRequest{Build: hungBuild(hung)})
			cancel()
			if !errors.Is(err, ErrDeadline) || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUnavailable) {
				t.Errorf("context deadline: %v", err)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("returned after %v", took)
			}

			// The request's deadline: pullcheck answers, the image unreachable.
			ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			report, err := checker.Check(ctx, CheckRequest{Build: hungBuild(hung), Deadline: time.Second})
			if err != nil {
				t.Fatalf("request deadline: %v", err)
			}
			if report.ExitCode != 3 || len(report.Unverified()) != 1 || report.Err() != nil {
				t.Errorf("request deadline: %+v", report)
			}

			// Below a millisecond the deadline is a millisecond (the service refuses
			// less): still an answer, not an error.
			report, err = checker.Check(ctx, CheckRequest{Build: hungBuild(hung), Deadline: time.Microsecond})
			if err != nil {
				t.Fatalf("sub-millisecond deadline: %v", err)
			}
			if report.ExitCode != 3 || len(report.Unverified()) != 1 {
				t.Errorf("sub-millisecond deadline: %+v", report)
			}
		})
	}
}

// A service with all its checks in flight answers 503 with Retry-After: an outage
// (ErrUnavailable) as well as a refusal (ErrStatus).
func TestServiceBusy(t *testing.T) {
	bin := binary(t, "PULLCHECK_BIN")
	reg := startRegistry(t)
	svc, err := launchService(bin, reg, "--max-checks", "1")
	if err != nil {
		t.Fatal(err)
	}
	hung := hungRegistry(t)
	client := NewClient(svc.url, svc.token)
	busy, stopBusy := context.WithCancel(context.Background())
	defer stopBusy()
	// The busy check holds the one slot; if a probe below holds it at that moment,
	// the busy check gets the 503 and tries again.
	go func() {
		for busy.Err() == nil {
			_, err := client.Check(busy, CheckRequest{Build: hungBuild(hung)})
			var status *StatusError
			if !errors.As(err, &status) || status.HTTPStatus != 503 {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()

	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := client.Check(ctx, CheckRequest{Build: hungBuild(hung), Deadline: 200 * time.Millisecond})
		cancel()
		var status *StatusError
		if errors.As(err, &status) && status.HTTPStatus == 503 {
			if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrStatus) || status.Message == "" {
				t.Errorf("503: %v", err)
			}
			t.Logf("busy: %v (retry after %v)", err, status.RetryAfter)
			return
		}
		// Until the first check is in flight, this one may run (and answer).
		if err != nil {
			t.Fatalf("want 503, got %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("no 503 while a check was in flight")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// bothTransports makes, per subtest, the binary's Checker (with reg's Docker config)
// and the service's.
func bothTransports(reg registry) map[string]func(t *testing.T) Checker {
	return map[string]func(t *testing.T) Checker{
		"command": func(t *testing.T) Checker {
			return NewCommand(binary(t, "PULLCHECK_BIN"), "--docker-config", reg.dockerConfig)
		},
		"client": func(t *testing.T) Checker {
			svc := startService(t)
			return NewClient(svc.url, svc.token)
		},
	}
}

// mustCheck runs one check within 30 s and fails the test on an error.
func mustCheck(t *testing.T, checker Checker, req CheckRequest) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	report, err := checker.Check(ctx, req)
	if err != nil {
		t.Fatalf("platform %q, runtime %q: %v", req.Platform, req.Runtime, err)
	}
	return report
}

// Platform reaches pullcheck through both transports: an index without the
// platform is missing (platform), as a single-arch placeholder would be.
func TestPlatform(t *testing.T) {
	reg := startRegistry(t)
	transports := bothTransports(reg)
	build := json.RawMessage(fmt.Sprintf(`{"id": "placeholder", "steps": [{"name": "placeholder",
		"image": "%s/team/ondemand:v2", "pull": "always"}]}`, reg.host))
	for name, transport := range transports {
		transport := transport
		t.Run(name, func(t *testing.T) {
			checker := transport(t)
			for platform, want := range map[string]string{"linux/arm64": "present", "linux/s390x": "missing/platform"} {
				report := mustCheck(t, checker, CheckRequest{Build: build, Platform: platform})
				if got := statuses(t, report, reg.host)["team/ondemand:v2"]; got != want {
					t.Errorf("%s: %s, want %s", platform, got, want)
				}
			}
		})
	}
}

// Runtime and PlaceholderImage reach pullcheck through both transports: on the
// Kubernetes runtime the placeholder image is checked too (a missing one fails the
// check), on the Docker runtime it is not.
func TestRuntimeAndPlaceholderImage(t *testing.T) {
	reg := startRegistry(t)
	transports := bothTransports(reg)
	build := json.RawMessage(fmt.Sprintf(`{"id": "runtime", "steps": [{"name": "app",
		"image": "%s/team/app:v1", "pull": "always"}]}`, reg.host))
	placeholder := reg.host + "/team/no-pause:1"
	for name, transport := range transports {
		transport := transport
		t.Run(name, func(t *testing.T) {
			checker := transport(t)
			for runtime, want := range map[string]string{"kubernetes": "missing/repository", "docker": ""} {
				report := mustCheck(t, checker, CheckRequest{Build: build, Runtime: runtime, PlaceholderImage: placeholder})
				got := statuses(t, report, reg.host)
				if got["team/app:v1"] != "present" {
					t.Errorf("%s: team/app:v1 is %q, want present", runtime, got["team/app:v1"])
				}
				if got["team/no-pause:1"] != want {
					t.Errorf("%s: the placeholder is %q, want %q (%v)", runtime, got["team/no-pause:1"], want, got)
				}
				if failed := len(report.Failed()) > 0; failed != (want != "") {
					t.Errorf("%s: Failed() = %v", runtime, report.Failed())
				}
			}
		})
	}
}

// The worker's own secrets never reach the binary: with Env nil, only DefaultEnv
// and PassEnv are passed. A wrapper records the environment the binary gets.
func TestCommandPassesNoWorkerSecret(t *testing.T) {
	bin := binary(t, "PULLCHECK_BIN")
	reg := startRegistry(t)
	t.Setenv("VELA_SERVER_SECRET", canarySecret)
	t.Setenv("VELA_DATABASE_ADDR", "postgres://vela:"+canaryToken+"@127.0.0.1/vela")
	t.Setenv("PULLCHECK_TEST_PASSED", "yes")
	dir := t.TempDir()
	script, envFile := filepath.Join(dir, "pullcheck-env"), filepath.Join(dir, "env")
	text := fmt.Sprintf("#!/bin/sh\nenv > %q\nexec %q \"$@\"\n", envFile, bin)
	if err := os.WriteFile(script, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	checker := NewCommand(script, "--docker-config", reg.dockerConfig)
	checker.PassEnv = []string{"PULLCHECK_TEST_*"}
	report := mustCheck(t, checker, CheckRequest{Build: testBuild(reg.host)})
	wantReport(t, report, reg.host, false)
	data, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	for _, canary := range []string{canarySecret, canaryToken} {
		if bytes.Contains(data, []byte(canary)) {
			t.Errorf("%q reached the binary's environment:\n%s", canary, data)
		}
	}
	if _, ok := got["VELA_SERVER_SECRET"]; ok {
		t.Error("VELA_SERVER_SECRET passed")
	}
	if got["PATH"] != os.Getenv("PATH") || got["PULLCHECK_TEST_PASSED"] != "yes" {
		t.Errorf("PATH or the PassEnv variable not passed: %v", got)
	}
}

// The worker's outputs image is checked with the build through both transports,
// named by its container; the Summary counts uses (team/app:v1 is used twice).
func TestOutputsImageBesideTheBuild(t *testing.T) {
	reg := startRegistry(t)
	build := json.RawMessage(fmt.Sprintf(`{"id": "outputs", "steps": [
		{"name": "one", "image": "%[1]s/team/app:v1", "pull": "always"},
		{"name": "two", "image": "%[1]s/team/app:v1", "pull": "always"}]}`, reg.host))
	images := []ExtraImage{{Reference: reg.host + "/vela/outputs:1", Policy: "not_present", Name: "outputs"}}
	for name, transport := range bothTransports(reg) {
		transport := transport
		t.Run(name, func(t *testing.T) {
			report := mustCheck(t, transport(t), CheckRequest{Build: build, Images: images})
			got := statuses(t, report, reg.host)
			if got["team/app:v1"] != "present" || got["vela/outputs:1"] != "missing/repository" || len(got) != 2 {
				t.Fatalf("statuses %v", got)
			}
			failed := report.Failed()
			if len(failed) != 1 || len(failed[0].Origins) != 1 {
				t.Fatalf("failed %+v", failed)
			}
			o := failed[0].Origins[0]
			if o.Kind != "image" || o.Name != "outputs" || failed[0].Policy != "not_present" {
				t.Errorf("origin %+v, policy %q", o, failed[0].Policy)
			}
			if s := report.Summary; s.Total != 3 || s.Present != 2 || s.Failed != 1 || len(report.Images) != 2 {
				t.Errorf("summary %+v for %d entries", s, len(report.Images))
			}
			want := `pullcheck: 1 image failed:` + "\n" + `image "outputs": image "` + reg.host + `/vela/outputs:1": missing repository`
			if err := report.Err(); err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Err() = %v", err)
			}
		})
	}
}

// An invalid container of a build is named by the report, not located in the
// package's own JSON: through both transports, its problem has no At and
// neither Detail nor Err() carries a file:line:column; the origin keeps its line.
func TestBuildProblemsNameTheContainer(t *testing.T) {
	reg := startRegistry(t)
	build := json.RawMessage(fmt.Sprintf(`{"id": "problems", "stages": [{"name": "test", "steps": [
		{"name": "lint", "image": "%[1]s/team/app:v1", "pull": "sometimes"}]}]}`, reg.host))
	for name, transport := range bothTransports(reg) {
		transport := transport
		t.Run(name, func(t *testing.T) {
			report := mustCheck(t, transport(t), CheckRequest{Build: build, FileName: "build"})
			failed := report.Failed()
			if len(failed) != 1 || failed[0].Status != "invalid" || len(failed[0].Problems) != 1 {
				t.Fatalf("failed %+v", failed)
			}
			image := failed[0]
			if image.Problems[0].At != nil {
				t.Errorf("problem at %+v", *image.Problems[0].At)
			}
			wantDetail := "unknown pull value \"sometimes\" for step `lint`; allowed values: "
			if !strings.HasPrefix(image.Detail, wantDetail) {
				t.Errorf("detail %q, want prefix %q", image.Detail, wantDetail)
			}
			if o := image.Origins[0]; o.Line == 0 || o.Kind != "step" || o.Name != "lint" || o.Stage != "test" {
				t.Errorf("origin %+v", o)
			}
			want := "pullcheck: 1 image failed:\n" + `step "lint" (stage "test"): image "` + reg.host +
				`/team/app:v1": invalid: ` + wantDetail
			if err := report.Err(); err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Err() = %v, want prefix %q", err, want)
			}
		})
	}
}

// The Command's binary reads the build as a compiled build (--build -): a refused
// build's message names the field, never a <stdin>:LINE:COLUMN into the package's
// own JSON, as the Client's 400 has no Line or Column.
func TestCommandRefusalHasNoPosition(t *testing.T) {
	bin := binary(t, "PULLCHECK_BIN")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bad := json.RawMessage(`{"id":"o_r_1","version":"1","steps":[{"id":"step_o_r_1_a","name":"a","image":5}]}`)
	_, err := NewCommand(bin).Check(ctx, CheckRequest{Build: bad})
	var status *StatusError
	if !errors.As(err, &status) || status.ExitCode != 2 || status.Line != 0 || status.Column != 0 {
		t.Fatalf("refused build: %v (%+v)", err, status)
	}
	if regexp.MustCompile(`<stdin>:[0-9]`).MatchString(status.Message) || !strings.Contains(status.Message, "steps[0].image") {
		t.Errorf("message %q: want the field and no position", status.Message)
	}
}

// A refusal of the binary keeps its lines: a bad --named-image and a bad --image
// are two lines of one message, not one line with \u000a.
func TestCommandErrorKeepsLineBreaks(t *testing.T) {
	bin := binary(t, "PULLCHECK_BIN")
	dir := t.TempDir()
	pipelines := []string{filepath.Join(dir, "a.yml"), filepath.Join(dir, "b.yml")}
	for _, p := range pipelines {
		if err := os.WriteFile(p, []byte("steps: [\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := NewCommand(bin, pipelines...).Check(ctx, CheckRequest{Build: testBuild("127.0.0.1:1")})
	var status *StatusError
	if !errors.As(err, &status) || status.ExitCode != 2 {
		t.Fatalf("want exit code 2: %v", err)
	}
	if strings.Contains(err.Error(), `\u000a`) || strings.Count(err.Error(), "\n") < 1 {
		t.Errorf("line breaks: %q", err.Error())
	}
}

// serve's --runtime and --placeholder-image are the defaults of requests without
// runtime and placeholder_image; a request's fields win.
func TestServeRuntimeAndPlaceholderDefaults(t *testing.T) {
	bin := binary(t, "PULLCHECK_BIN")
	reg := startRegistry(t)
	svc, err := launchService(bin, reg, "--runtime", "kubernetes", "--placeholder-image", reg.host+"/team/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	client := NewClient(svc.url, svc.token)
	build := json.RawMessage(fmt.Sprintf(`{"id": "defaults", "steps": [{"name": "db",
		"image": "%s/library/postgres:16", "pull": "not_present"}]}`, reg.host))
	report := mustCheck(t, client, CheckRequest{Build: build})
	if len(report.Images) != 2 || report.Images[0].Origins[0].Kind != "placeholder" ||
		report.Images[0].Reference != reg.host+"/team/app:v1" || report.Images[0].Status != "present" {
		t.Errorf("the service's placeholder: %+v", report.Images)
	}
	report = mustCheck(t, client, CheckRequest{Build: build, PlaceholderImage: reg.host + "/team/no-pause:1"})
	if got := statuses(t, report, reg.host); got["team/no-pause:1"] != "missing/repository" || report.ExitCode != 1 {
		t.Errorf("the request's placeholder: %v", got)
	}
	report = mustCheck(t, client, CheckRequest{Build: build, Runtime: "docker"})
	if len(report.Images) != 1 || report.ExitCode != 0 {
		t.Errorf("the request's runtime: %+v", report.Images)
	}
}

// The egress refusal of a blocked row reaches the Go caller as data: the build's
// registry is a cloud metadata address, which pullcheck's default egress policy
// refuses (nothing is sent to it).
func TestEgressRefusalIsData(t *testing.T) {
	bin := binary(t, "PULLCHECK_BIN")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	report, err := NewCommand(bin).Check(ctx, CheckRequest{Build: testBuild("169.254.169.254")})
	if err != nil {
		t.Fatal(err)
	}
	var row *Image
	for i := range report.Images {
		if report.Images[i].Reference == "169.254.169.254/team/app:v1" {
			row = &report.Images[i]
		}
	}
	if row == nil {
		t.Fatalf("no row for the app image: %+v", report.Images)
	}
	if row.Status != "blocked" || row.Reason != ReasonEgressDenied || row.Egress == nil {
		t.Fatalf("row %+v", row)
	}
	m, r := row.Egress.Matched, row.Egress.Rule
	if m.Kind != "address" || m.Address != "169.254.169.254" || m.Name != "" || m.Port == nil || *m.Port != 443 {
		t.Errorf("matched %+v (port %v)", m, m.Port)
	}
	if r.Kind != "deny" || r.Pattern != "169.254.0.0/16" || !r.Default {
		t.Errorf("rule %+v", r)
	}
	for _, other := range report.Images {
		if other.Reason != ReasonEgressDenied && other.Egress != nil {
			t.Errorf("%s: egress %+v", other.Reference, other.Egress)
		}
	}
}

// The egress policy refuses the token server of the token-auth registry (not the
// registry): the row names the token server as the host that failed.
func TestRefusedTokenServerIsTheFailedHost(t *testing.T) {
	bin := binary(t, "PULLCHECK_BIN")
	reg := startRegistry(t)
	if reg.tokenServer == "" {
		t.Fatal("the testkit registry named no token realm")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := NewCommand(bin)
	cmd.Args = []string{"--docker-config", reg.dockerConfig, "--deny-registry", reg.tokenServer}
	report, err := cmd.Check(ctx, CheckRequest{Build: testBuild(reg.host)})
	if err != nil {
		t.Fatal(err)
	}
	var row *Image
	for i := range report.Images {
		if report.Images[i].Reference == reg.host+"/team/app:v1" {
			row = &report.Images[i]
		}
	}
	if row == nil {
		t.Fatalf("no row for the app image: %+v", report.Images)
	}
	if row.Status != "blocked" || row.Reason != ReasonEgressDenied || row.Egress == nil {
		t.Fatalf("row %+v", row)
	}
	want := FailedHost{Host: reg.tokenServer, Role: RoleTokenServer}
	if row.FailedHost == nil || *row.FailedHost != want {
		t.Errorf("failed host %+v, want %+v", row.FailedHost, want)
	}
	if row.Registry != reg.host {
		t.Errorf("registry %q, want %q", row.Registry, reg.host)
	}
}

// A template step of a Vela source pipeline names its template in the JSON report,
// as the binary prints it.
func TestTemplateStepNamesItsTemplate(t *testing.T) {
	bin := binary(t, "PULLCHECK_BIN")
	dir := t.TempDir()
	pipeline := filepath.Join(dir, ".vela.yml")
	text := "version: \"1\"\ntemplates: [{name: go_build, source: x.yml, type: file}]\n" +
		"steps:\n  - name: templated\n    template:\n      name: go_build\n" +
		"  - name: local\n    image: 127.0.0.1:1/team/app:v1\n    pull: never\n    commands: [ x ]\n"
	if err := os.WriteFile(pipeline, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "check", "--format", "json", pipeline).Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var report Report
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(report.Images) != 2 {
		t.Fatalf("images %+v", report.Images)
	}
	row := report.Images[0]
	if row.Status != "skipped" || row.Reason != ReasonTemplateStep || row.Template != "go_build" || row.Egress != nil {
		t.Errorf("row %+v", row)
	}
	if never := report.Images[1]; never.Reason != ReasonNeverPulled || never.Template != "" {
		t.Errorf("row %+v", never)
	}
}

// The registry's answer reaches the Go caller as data, through both transports: the
// HTTP status of each row's answer, and the registry's error envelope. distribution
// answers the manifest HEAD 200 for a present image and 404 (no body) for a missing
// tag; for a missing repository the tag list GET answers 404 with NAME_UNKNOWN,
// "repository name not known to registry" (distribution's registry/api/v2/errors.go).
func TestRegistryAnswerIsData(t *testing.T) {
	reg := startRegistry(t)
	for name, transport := range bothTransports(reg) {
		transport := transport
		t.Run(name, func(t *testing.T) {
			report := mustCheck(t, transport(t), CheckRequest{Build: testBuild(reg.host)})
			rows := map[string]Image{}
			for _, image := range report.Images {
				rows[strings.TrimPrefix(image.Reference, reg.host+"/")] = image
			}
			for ref, want := range map[string]int{"team/app:v1": 200, "team/app:v9": 404, "team/nothing:v1": 404} {
				if got := rows[ref].HTTPStatus; got != want {
					t.Errorf("%s: http_status %d, want %d (%+v)", ref, got, want, rows[ref])
				}
			}
			if got := rows["team/app:v1"].RegistryErrors; len(got) != 0 {
				t.Errorf("present: registry_errors %+v", got)
			}
			gone := rows["team/nothing:v1"]
			want := []RegistryError{{Code: "NAME_UNKNOWN", Message: "repository name not known to registry"}}
			if gone.Reason != ReasonRepositoryNotFound || !reflect.DeepEqual(gone.RegistryErrors, want) {
				t.Errorf("missing repository: reason %s, registry_errors %+v", gone.Reason, gone.RegistryErrors)
			}
			// The on_start step is not asked: no answer, no status.
			if later := rows["team/ondemand:v2"]; later.HTTPStatus != 0 || later.RegistryErrors != nil {
				t.Errorf("deferred: %+v", later)
			}
		})
	}
}

// The testkit's token server answers team/notoken 200 without a token, team/forbidden
// 403 and team/broken 500 (launchRegistry's --token-fault): each image's reason and
// failed host, the token server with the status it answered, through both
// transports. One image a check: pullcheck asks one token for the scopes of all the
// images of a registry.
func TestTokenServerFaultsAreData(t *testing.T) {
	reg := startRegistry(t)
	if reg.tokenServer == "" {
		t.Fatal("the testkit registry named no token realm")
	}
	for name, transport := range bothTransports(reg) {
		transport := transport
		t.Run(name, func(t *testing.T) {
			checker := transport(t)
			for _, c := range []struct {
				repository, status, reason string
				answered                   int
			}{
				{"team/notoken", "unreachable", ReasonBadTokenReply, 200},
				{"team/forbidden", "denied", ReasonCredentialsRejected, 403},
				{"team/broken", "unreachable", ReasonServerError, 500},
			} {
				image := reg.host + "/" + c.repository + ":v1"
				build := &velaBuild{ID: "octocat_hello-world_8", Version: "1",
					Stages: []*velaStage{{Name: "build", Steps: []*velaContainer{
						{ID: "step_build_app", Name: "app", Number: 1, Image: image, Pull: "always"}}}}}
				report := mustCheck(t, checker, CheckRequest{Build: build})
				if len(report.Images) != 1 {
					t.Fatalf("%s: images %+v", c.repository, report.Images)
				}
				row := report.Images[0]
				want := FailedHost{Host: reg.tokenServer, Role: RoleTokenServer, HTTPStatus: c.answered}
				if row.Status != c.status || row.Reason != c.reason || row.FailedHost == nil || *row.FailedHost != want {
					t.Errorf("%s: status %s, reason %s, failed host %+v; want %s, %s, %+v",
						c.repository, row.Status, row.Reason, row.FailedHost, c.status, c.reason, want)
				}
				if row.Registry != reg.host {
					t.Errorf("%s: registry %q, want %q", c.repository, row.Registry, reg.host)
				}
			}
		})
	}
}
