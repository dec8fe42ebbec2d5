package pullcheck

import (
	"errors"
	"reflect"
	"testing"
)

// Without Env, only the allowed variables reach the binary: never the worker's
// own secrets.
func TestCommandEnvironmentIsAnAllowList(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin", "HOME=/home/vela", "VELA_SERVER_SECRET=" + canarySecret,
		"KUBERNETES_SERVICE_HOST=127.0.0.1", "KUBERNETES_SERVICE_PORT=6443",
		"VELA_QUEUE_ADDR=redis://:" + canaryToken + "@127.0.0.1", "https_proxy=http://127.0.0.1:3128",
		"AWS_REGION=eu-west-1", "PULLCHECK_LOG=debug", "=odd", "NOEQUALS",
	}
	c := NewCommand("/bin/pullcheck")
	want := []string{"PATH=/usr/bin", "HOME=/home/vela", "KUBERNETES_SERVICE_HOST=127.0.0.1",
		"KUBERNETES_SERVICE_PORT=6443", "https_proxy=http://127.0.0.1:3128", "PULLCHECK_LOG=debug"}
	if got := c.environment(environ); !reflect.DeepEqual(got, want) {
		t.Errorf("default:\n got %q\nwant %q", got, want)
	}
	c.PassEnv = []string{"AWS_*"}
	want = append(want[:5:5], "AWS_REGION=eu-west-1", "PULLCHECK_LOG=debug")
	if got := c.environment(environ); !reflect.DeepEqual(got, want) {
		t.Errorf("PassEnv AWS_*:\n got %q\nwant %q", got, want)
	}
	c.Env = []string{"ONLY=this"}
	if got := c.environment(environ); !reflect.DeepEqual(got, c.Env) {
		t.Errorf("Env given: %q", got)
	}
	// An empty, non-nil Env is an empty environment, not the default.
	c.Env = []string{}
	if got := c.environment(environ); len(got) != 0 {
		t.Errorf("empty Env: %q", got)
	}
}

// The binary's message keeps its line breaks; other control characters stay escaped.
func TestStatusErrorShowsRealLineBreaks(t *testing.T) {
	e := &StatusError{ExitCode: 2, Message: "first: bad\nsecond: worse\x1b[31m\r\nthird", Line: 4, Column: 9}
	want := "pullcheck refused the check: exit code 2: first: bad\nsecond: worse\\u001b[31m\nthird"
	if got := e.Error(); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

func TestExtraImages(t *testing.T) {
	req := CheckRequest{Images: []ExtraImage{
		{Reference: "127.0.0.1:5000/vela/outputs:1", Name: "outputs"},
		{Reference: "127.0.0.1:5000/vela/sidecar:2", Policy: "not_present"},
	}}
	args := NewCommand("/bin/pullcheck").commandArgs(req)
	want := []string{"check", "--format", "json",
		"--named-image", "outputs=127.0.0.1:5000/vela/outputs:1=always",
		"--named-image", "127.0.0.1:5000/vela/sidecar:2=127.0.0.1:5000/vela/sidecar:2=not_present", "--build", "-"}
	if !reflect.DeepEqual(args, want) {
		t.Errorf("args:\n got %q\nwant %q", args, want)
	}
	for _, bad := range []ExtraImage{{Reference: " "}, {Reference: "a:1", Name: "x=y"}, {Reference: "a:1\n--image=b"}} {
		if err := checkImages([]ExtraImage{bad}); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if err := checkImages(req.Images); err != nil {
		t.Error(err)
	}
}
