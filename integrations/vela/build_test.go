package pullcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The shape of go-vela/server's compiler/types/pipeline Build and Container, with
// the JSON names upstream gives them (read 2026-12), for a build as the worker
// holds it: secrets injected, token set.
type velaContainer struct {
	ID          string            `json:"id,omitempty"`
	Commands    []string          `json:"commands,omitempty"`
	Environment map[string]string `json:"environment,omitempty"`
	Image       string            `json:"image,omitempty"`
	Name        string            `json:"name,omitempty"`
	Number      int32             `json:"number,omitempty"`
	Pull        string            `json:"pull,omitempty"`
	Secrets     []velaStepSecret  `json:"secrets,omitempty"`
}

type velaStepSecret struct {
	Source string `json:"source,omitempty"`
	Target string `json:"target,omitempty"`
}

type velaSecret struct {
	Name   string         `json:"name,omitempty"`
	Value  string         `json:"value,omitempty"`
	Key    string         `json:"key,omitempty"`
	Engine string         `json:"engine,omitempty"`
	Type   string         `json:"type,omitempty"`
	Origin *velaContainer `json:"origin,omitempty"`
	Pull   string         `json:"pull,omitempty"`
}

type velaStage struct {
	Name        string            `json:"name,omitempty"`
	Environment map[string]string `json:"environment,omitempty"`
	Steps       []*velaContainer  `json:"steps,omitempty"`
}

type velaBuild struct {
	ID          string            `json:"id,omitempty"`
	Token       string            `json:"token,omitempty"`
	TokenExp    int64             `json:"token_exp,omitempty"`
	Version     string            `json:"version,omitempty"`
	Environment map[string]string `json:"environment,omitempty"`
	Secrets     []*velaSecret     `json:"secrets,omitempty"`
	Services    []*velaContainer  `json:"services,omitempty"`
	Stages      []*velaStage      `json:"stages,omitempty"`
	Steps       []*velaContainer  `json:"steps,omitempty"`
}

const (
	canaryToken  = "CANARY-TOKEN-ghs_5f3a9c"
	canarySecret = "CANARY-SECRET-hunter2"
)

func TestBuildJSONDropsTokenAndSecretValues(t *testing.T) {
	b := velaBuild{
		ID: "octocat_hello_1", Token: canaryToken, TokenExp: 99, Version: "1",
		Environment: map[string]string{"VELA_BUILD_TOKEN": canaryToken},
		Secrets: []*velaSecret{
			{Name: "docker_password", Value: canarySecret, Key: "octocat/docker_password", Engine: "native", Type: "repo", Pull: "build_start"},
			{Name: "vault", Origin: &velaContainer{ID: "secret_vault", Name: "vault", Image: "target/secret-vault:v1", Pull: "always",
				Environment: map[string]string{"VAULT_TOKEN": canarySecret}}},
		},
		Stages: []*velaStage{{Name: "build", Environment: map[string]string{"X": canarySecret}, Steps: []*velaContainer{{
			ID: "step_build_test", Name: "test", Number: 2, Pull: "always",
			Image:       "golang:${GO_VERSION}-${DOCKER_PASSWORD}",
			Commands:    []string{"echo " + canarySecret},
			Environment: map[string]string{"GO_VERSION": "1.22", "DOCKER_PASSWORD": canarySecret, "OTHER": canarySecret},
			Secrets:     []velaStepSecret{{Source: "docker_password", Target: "docker_password"}},
		}}}},
	}
	for name, build := range map[string]any{"struct": &b, "raw": mustJSON(t, b)} {
		out, err := buildJSON(build)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text := string(out)
		for _, canary := range []string{canaryToken, canarySecret, "token", "commands"} {
			if strings.Contains(text, canary) {
				t.Errorf("%s: %q sent: %s", name, canary, text)
			}
		}
		var got struct {
			Stages []struct {
				Steps []map[string]any `json:"steps"`
			} `json:"stages"`
			Secrets []map[string]any `json:"secrets"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		step := got.Stages[0].Steps[0]
		if env := step["environment"]; !reflect.DeepEqual(env, map[string]any{"GO_VERSION": "1.22"}) {
			t.Errorf("%s: environment sent %v, want only the image's non-secret variable", name, env)
		}
		if step["image"] != "golang:${GO_VERSION}-${DOCKER_PASSWORD}" || step["pull"] != "always" || step["name"] != "test" {
			t.Errorf("%s: step %v", name, step)
		}
		origin, _ := got.Secrets[1]["origin"].(map[string]any)
		if origin["image"] != "target/secret-vault:v1" || !reflect.DeepEqual(origin["environment"], map[string]any{}) {
			t.Errorf("%s: origin %v", name, origin)
		}
	}
}

func TestBuildJSONRefusesNonObjects(t *testing.T) {
	for _, build := range []any{nil, json.RawMessage(`[1]`), []byte(`not json ` + canaryToken), 42} {
		_, err := buildJSON(build)
		if !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%v: got %v, want ErrInvalidRequest", build, err)
		}
		if err != nil && strings.Contains(err.Error(), canaryToken) {
			t.Errorf("error quotes the build: %v", err)
		}
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestErrText(t *testing.T) {
	r := &Report{Images: []Image{
		{Reference: "alpine:3.19", Status: "present"},
		{Reference: "r/team/app:v9", Status: "missing", Missing: "tag", Detail: "tag v9 not found; close: v1",
			Origins: []Origin{{File: "build.json", Line: 12, Column: 18, Kind: "step", Name: "typo", Stage: "build"},
				{File: "build.json", Kind: "service", Name: "db"}}},
		{Reference: "r/team/gone:v1", Status: "no_access", Detail: "line\x1bone",
			Origins: []Origin{{Kind: "secret", Name: "vault"}}},
		{Reference: "r/later:v1", Status: "deferred"},
	}}
	want := `pullcheck: 2 images failed:
step "typo" (stage "build"), service "db": image "r/team/app:v9": missing tag: tag v9 not found; close: v1
secret origin "vault": image "r/team/gone:v1": no access: line\u001bone`
	err := r.Err()
	if err == nil || err.Error() != want {
		t.Fatalf("Err() =\n%v\nwant\n%s", err, want)
	}
	if !errors.Is(err, ErrImagesFailed) {
		t.Error("errors.Is(ErrImagesFailed) false")
	}
	var fe *FailedError
	if !errors.As(err, &fe) || len(fe.Images) != 2 {
		t.Errorf("errors.As: %v", fe)
	}
	if (&Report{Images: []Image{{Status: "present"}, {Status: "unreachable"}}}).Err() != nil {
		t.Error("Err() not nil without failures")
	}
	if (*Report)(nil).Err() != nil {
		t.Error("nil report")
	}
}

func TestSentinels(t *testing.T) {
	s := &StatusError{HTTPStatus: 503, Message: "too many checks"}
	if !errors.Is(s, ErrStatus) || !errors.Is(s, ErrUnavailable) || errors.Is(s, ErrDeadline) {
		t.Error("503 classification")
	}
	s = &StatusError{HTTPStatus: 401, Message: "unauthorized"}
	if !errors.Is(s, ErrStatus) || errors.Is(s, ErrUnavailable) {
		t.Error("401 classification")
	}
	e := newError(ErrInvalidAnswer, errors.New("cause"), "reading")
	if !errors.Is(e, ErrInvalidAnswer) || errors.Is(e, ErrUnavailable) || e.Error() != "pullcheck gave an invalid answer: reading: cause" {
		t.Errorf("%v", e)
	}
}

func TestClientNeverPrintsItsToken(t *testing.T) {
	c := NewClient("http://user:pw@127.0.0.1:1", canaryToken)
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(format, c); strings.Contains(s, canaryToken) || strings.Contains(s, ":pw@") {
			t.Errorf("%s: %s", format, s)
		}
	}
}

func TestWorkerConfigNeverPrintsItsToken(t *testing.T) {
	c := WorkerConfig{URL: "http://user:pw@127.0.0.1:1", Token: canaryToken, RuntimeDriver: "kubernetes"}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, v := range []any{c, &c} {
			s := fmt.Sprintf(format, v)
			if strings.Contains(s, canaryToken) || strings.Contains(s, ":pw@") {
				t.Errorf("%s: %s", format, s)
			}
			if !strings.Contains(s, "kubernetes") || !strings.Contains(s, "[redacted]") {
				t.Errorf("%s: the other fields and the redaction mark are missing: %s", format, s)
			}
		}
	}
}

// The length form ${#V} depends on V's value too: V is sent with the image, as the
// other forms are (drone/envsubst: `${#var01}` of "abcdEFGH28ij" is "12").
func TestBuildJSONKeepsTheVariableOfALength(t *testing.T) {
	b := velaBuild{ID: "octocat_hello_1", Steps: []*velaContainer{{
		ID: "step_test", Name: "test", Image: "alpine:3.${#V}", Pull: "always",
		Environment: map[string]string{"V": "abcdEFGH28ij", "OTHER": canarySecret},
	}}}
	raw, err := buildJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	var sent struct {
		Steps []struct {
			Environment map[string]string `json:"environment"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(raw, &sent); err != nil {
		t.Fatal(err)
	}
	if len(sent.Steps) != 1 || sent.Steps[0].Environment["V"] != "abcdEFGH28ij" {
		t.Fatalf("V not sent for ${#V}: %s", raw)
	}
	if strings.Contains(string(raw), canarySecret) {
		t.Fatalf("an unused variable was sent: %s", raw)
	}
}

// A build without an ID (pipeline.Build's `id` is omitempty) is still sent with a
// top-level "id", the key by which pullcheck tells a compiled build from source.
func TestBuildJSONAlwaysCarriesAnID(t *testing.T) {
	for name, build := range map[string]any{
		"no id":   json.RawMessage(`{"steps":[{"name":"a","image":"alpine:3"}]}`),
		"null id": json.RawMessage(`{"id":null,"steps":[]}`),
		"an id":   json.RawMessage(`{"id":"x_1","steps":[]}`),
	} {
		out, err := buildJSON(build)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		id, ok := got["id"].(string)
		want := ""
		if name == "an id" {
			want = "x_1"
		}
		if !ok || id != want {
			t.Errorf("%s: id %v, want %q", name, got["id"], want)
		}
	}
}
