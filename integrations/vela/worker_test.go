//go:build unix

package pullcheck

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// logBuffer is the init step's log as go-vela/server's *api.Log gathers it.
type logBuffer struct{ data []byte }

func (l *logBuffer) AppendData(data []byte) { l.data = append(l.data, data...) }

func TestNewWorkerCheckRefusals(t *testing.T) {
	if w, err := NewWorkerCheck(WorkerConfig{RuntimeDriver: "kubernetes"}); w != nil || err != nil {
		t.Errorf("off: %v, %v", w, err)
	}
	if err := (*WorkerCheck)(nil).Run(context.Background(), nil, &logBuffer{}); err != nil {
		t.Errorf("nil Run: %v", err)
	}
	for name, cfg := range map[string]WorkerConfig{
		"both":           {URL: "http://127.0.0.1:1", Binary: "/bin/pullcheck", RuntimeDriver: "kubernetes"},
		"docker":         {URL: "http://127.0.0.1:1", RuntimeDriver: "docker"},
		"bad url":        {URL: "ftp://127.0.0.1", RuntimeDriver: "kubernetes"},
		"template file":  {URL: "http://127.0.0.1:1", RuntimeDriver: "kubernetes", PodsTemplateFile: "/t.yaml"},
		"outputs broken": {Binary: "/bin/pullcheck", RuntimeDriver: "kubernetes", OutputsImage: "a:1\nb"},
	} {
		if _, err := NewWorkerCheck(cfg); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: %v", name, err)
		}
	}
	w, err := NewWorkerCheck(WorkerConfig{Binary: "/bin/pullcheck", RuntimeDriver: "kubernetes",
		Namespace: "vela", PodsTemplate: "pods", OutputsImage: "127.0.0.1:5000/vela/outputs:1", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	want := []ExtraImage{{Reference: "127.0.0.1:5000/vela/outputs:1", Policy: "not_present", Name: "outputs"}}
	if fmt.Sprint(w.request.Images) != fmt.Sprint(want) || w.request.Runtime != "kubernetes" ||
		w.request.Namespace != "vela" || w.request.Deadline != 9*time.Second {
		t.Errorf("request %+v", w.request)
	}
}

// The build's error stays within the server's 1,000 characters, naming as many
// images as fit and how many more the log lists.
func TestWorkerCheckErrorFitsTheBuildError(t *testing.T) {
	var images []Image
	for i := 0; i < 60; i++ {
		images = append(images, Image{Reference: fmt.Sprintf("registry.example.com/team/app-%02d:v9", i),
			Status: "missing", Missing: "tag", Origins: []Origin{{Kind: "step", Name: fmt.Sprint("s", i)}}})
	}
	err := &WorkerCheckError{Err: &FailedError{Images: images}}
	msg := err.Error()
	if len(msg) > MaxBuildError {
		t.Errorf("%d bytes", len(msg))
	}
	if !strings.HasPrefix(msg, `60 images failed (all in the init step's log): "registry.example.com/team/app-00:v9" (missing tag),`) {
		t.Errorf("head: %s", msg)
	}
	shown := strings.Count(msg, "(missing tag)")
	if !strings.HasSuffix(msg, fmt.Sprintf(" and %d more", 60-shown)) || shown < 10 {
		t.Errorf("%d shown: %s", shown, msg)
	}
	if !errors.Is(err, ErrImagesFailed) {
		t.Error("does not wrap the FailedError")
	}
	one := (&WorkerCheckError{Err: &FailedError{Images: images[:1]}}).Error()
	if one != `1 image failed (all in the init step's log): "registry.example.com/team/app-00:v9" (missing tag)` {
		t.Errorf("one: %s", one)
	}
	long := (&WorkerCheckError{Err: errors.New(strings.Repeat("é", 800))}).Error()
	if len(long) > MaxBuildError || !strings.HasSuffix(long, "…") {
		t.Errorf("outage: %d bytes", len(long))
	}
}

// With fail-open, a service that is down lets the build go on, with the outage in
// the log; without it, the build fails with it.
func TestWorkerCheckServiceDown(t *testing.T) {
	url := "http://" + closedAddress(t)
	build := testBuild("127.0.0.1:1")
	for _, failOpen := range []bool{true, false} {
		w, err := NewWorkerCheck(WorkerConfig{URL: url, Token: apiToken, RuntimeDriver: "kubernetes", FailOpen: failOpen})
		if err != nil {
			t.Fatal(err)
		}
		log := &logBuffer{}
		err = w.Run(context.Background(), build, log)
		text := string(log.data)
		if !strings.HasPrefix(text, "> Checking images...\n> pullcheck: ") || strings.Contains(text, apiToken) {
			t.Errorf("fail open %v: log %q", failOpen, text)
		}
		if failOpen && err != nil {
			t.Errorf("fail open: %v", err)
		}
		if !failOpen && !errors.Is(err, ErrUnavailable) {
			t.Errorf("fail closed: %v", err)
		}
	}
}
