package pullcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client is the [Checker] that asks `pullcheck serve`: one POST /v1/checks per
// check, with the bearer token, answered with the CLI's JSON report plus exit_code.
// Its fields may be set before the first Check; a Client is safe for concurrent
// use after that.
type Client struct {
	// BaseURL is the service's URL, such as "https://pullcheck.vela.svc:8080"; the
	// path /v1/checks is appended.
	BaseURL string
	// HTTPClient sends the requests; nil: a client of its own with keep-alive
	// connections and no timeout of its own (the context bounds each check).
	HTTPClient *http.Client
	// MaxAnswer bounds the answer's size in bytes; 0: 64 MiB.
	MaxAnswer int64

	token string
}

// NewClient returns a Client for the service at baseURL (such as
// "https://pullcheck.vela.svc:8080") that sends token as its
// `Authorization: Bearer` header (none when empty). The token is a line of the
// service's --api-token-file; it is never put in an error or a log.
func NewClient(baseURL, token string) *Client {
	return &Client{BaseURL: baseURL, token: strings.TrimSpace(token)}
}

// defaultHTTP is shared by Clients without an HTTPClient, so that connections are
// kept between checks.
var defaultHTTP = &http.Client{Transport: http.DefaultTransport}

// request is the body of POST /v1/checks (pullcheck serve's API v1).
type request struct {
	Build            json.RawMessage `json:"build"`
	FileName         string          `json:"file_name,omitempty"`
	Namespace        string          `json:"namespace,omitempty"`
	PodsTemplate     string          `json:"pods_template,omitempty"`
	IncludeOnStart   bool            `json:"include_on_start,omitempty"`
	Platform         string          `json:"platform,omitempty"`
	Runtime          string          `json:"runtime,omitempty"`
	PlaceholderImage string          `json:"placeholder_image,omitempty"`
	DeadlineSeconds  float64         `json:"deadline_seconds,omitempty"`
	Images           []imageArg      `json:"images,omitempty"`
}

// imageArg is one entry of the request's images.
type imageArg struct {
	Reference string `json:"reference"`
	Policy    string `json:"policy,omitempty"`
	Name      string `json:"name,omitempty"`
}

// errorBody is the service's answer other than 200.
type errorBody struct {
	Error struct {
		Message string         `json:"message"`
		Line    int            `json:"line"`
		Column  int            `json:"column"`
		Refusal *Refusal       `json:"refusal"`
		Kind    string         `json:"kind"`
		Field   string         `json:"field"`
		Inputs  []EmptyInput   `json:"inputs"`
		Lookup  *LookupFailure `json:"lookup"`
	} `json:"error"`
}

// Check posts the build to the service and returns its report. Errors: see
// [Checker]; a non-200 answer is a *[StatusError] with the service's message.
func (c *Client) Check(ctx context.Context, req CheckRequest) (*Report, error) {
	if req.PodsTemplateFile != "" {
		return nil, newError(ErrInvalidRequest, nil,
			"PodsTemplateFile is not supported by the service (it reads no file of the caller); use PodsTemplate or the Command")
	}
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
	body := request{
		Build:            build,
		FileName:         req.FileName,
		Namespace:        req.Namespace,
		PodsTemplate:     req.PodsTemplate,
		IncludeOnStart:   req.IncludeOnStart,
		Platform:         req.Platform,
		Runtime:          req.Runtime,
		PlaceholderImage: req.PlaceholderImage,
	}
	for _, image := range req.Images {
		body.Images = append(body.Images, imageArg{Reference: image.Reference, Policy: image.Policy, Name: image.Name})
	}
	if req.Deadline > 0 {
		// The service takes at least a millisecond, as the Command's --deadline does.
		body.DeadlineSeconds = req.Deadline.Seconds()
		if req.Deadline < time.Millisecond {
			body.DeadlineSeconds = 0.001
		}
	}
	encoded, err := json.Marshal(body)
	if err != nil {
		return nil, newError(ErrInvalidRequest, nil, "the request could not be encoded")
	}
	endpoint, err := c.endpoint()
	if err != nil {
		return nil, err
	}
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(encoded))
	if err != nil {
		return nil, newError(ErrInvalidRequest, nil, "the request could not be built for %s", redact(endpoint))
	}
	httpReq.Header.Set("Content-Type", "application/json")
	httpReq.Header.Set("Accept", "application/json")
	if c.token != "" {
		httpReq.Header.Set("Authorization", "Bearer "+c.token)
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(httpReq)
	if err != nil {
		return nil, transportError(ctx, err, endpoint)
	}
	defer resp.Body.Close()

	limit := c.MaxAnswer
	if limit <= 0 {
		limit = 64 << 20
	}
	if resp.StatusCode != http.StatusOK {
		limit = 64 << 10
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, transportError(ctx, err, endpoint)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(resp, data, limit)
	}
	if int64(len(data)) > limit {
		return nil, newError(ErrInvalidAnswer, nil, "the answer of %s is over %d bytes", redact(endpoint), limit)
	}
	report, err := decodeReport(data, redact(endpoint))
	if err != nil {
		return nil, err
	}
	if !hasKey(data, "exit_code") {
		report.ExitCode = exitCode(report.Summary)
	}
	return report, nil
}

// hasKey reports whether the JSON object has the key.
func hasKey(data []byte, key string) bool {
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil {
		return false
	}
	_, ok := fields[key]
	return ok
}

// exitCode is the CLI's exit code for a summary: 1 failed, 3 unverified, else 0.
func exitCode(s Summary) int {
	switch {
	case s.Failed > 0:
		return 1
	case s.Unverified > 0:
		return 3
	}
	return 0
}

func (c *Client) endpoint() (string, error) {
	u, err := url.Parse(strings.TrimSpace(c.BaseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", newError(ErrInvalidRequest, nil, "the service URL must be http:// or https:// with a host")
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/checks"
	u.RawQuery, u.Fragment = "", ""
	return u.String(), nil
}

// redact drops a password from a URL, for errors.
func redact(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil {
		return u.Redacted()
	}
	return "the service"
}

// transportError classifies an error of sending or reading: the context's deadline
// (or the HTTP client's timeout) is ErrDeadline, a canceled context is returned as
// such, anything else is ErrUnavailable.
func transportError(ctx context.Context, err error, endpoint string) error {
	if ctx.Err() != nil {
		return contextError(ctx, "asking "+redact(endpoint))
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return newError(ErrDeadline, context.DeadlineExceeded, "asking %s: %v", redact(endpoint), stripURL(err))
	}
	return newError(ErrUnavailable, stripURL(err), "asking %s", redact(endpoint))
}

// stripURL unwraps a *url.Error, whose message repeats the method and URL.
func stripURL(err error) error {
	var u *url.Error
	if errors.As(err, &u) {
		return u.Err
	}
	return err
}

func statusError(resp *http.Response, data []byte, limit int64) error {
	if int64(len(data)) > limit {
		data = data[:limit]
	}
	e := &StatusError{HTTPStatus: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id")}
	var body errorBody
	if json.Unmarshal(data, &body) == nil && body.Error.Message != "" {
		e.Message, e.Line, e.Column = body.Error.Message, body.Error.Line, body.Error.Column
		e.Refusal = body.Error.Refusal
		e.Kind, e.Field = body.Error.Kind, body.Error.Field
		e.Inputs, e.Lookup = body.Error.Inputs, body.Error.Lookup
	} else {
		e.Message = http.StatusText(resp.StatusCode)
	}
	if s, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && s >= 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

// decodeReport reads a report; unknown fields are allowed (pullcheck may add some).
func decodeReport(data []byte, from string) (*Report, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, newError(ErrInvalidAnswer, nil, "the answer of %s is not a JSON object", from)
	}
	for _, key := range []string{"images", "summary"} {
		if _, ok := fields[key]; !ok {
			return nil, newError(ErrInvalidAnswer, nil, "the answer of %s has no %q", from, key)
		}
	}
	var report Report
	if err := json.Unmarshal(data, &report); err != nil {
		return nil, newError(ErrInvalidAnswer, err, "the answer of %s is not a report", from)
	}
	if report.Images == nil {
		report.Images = []Image{}
	}
	return &report, nil
}

var _ Checker = (*Client)(nil)

// String describes the client without its token.
func (c *Client) String() string {
	return fmt.Sprintf("pullcheck.Client(%s)", redact(c.BaseURL))
}

// GoString is String, so that %#v does not print the token either.
func (c *Client) GoString() string { return c.String() }
