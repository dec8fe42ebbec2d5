package pullcheck

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Checker checks every image of a compiled build against its registries.
//
// Check returns a report whatever the images' statuses (a missing image is not an
// error of Check; see [Report.Err]), or an error when no report could be had:
// wrapped so that [errors.Is] matches one of [ErrUnavailable], [ErrStatus],
// [ErrDeadline], [ErrInvalidAnswer] or [ErrInvalidRequest] (or [context.Canceled]
// when ctx was canceled).
type Checker interface {
	Check(ctx context.Context, req CheckRequest) (*Report, error)
}

// CheckRequest is one build to check, with where its Pod will run.
type CheckRequest struct {
	// Build is the compiled build as the worker holds it: a *pipeline.Build of
	// go-vela/server's compiler/types/pipeline, any value that encodes to the same
	// JSON object, or a json.RawMessage / []byte of that JSON.
	//
	// Only what says which images are pulled is sent: the top-level id and version,
	// and for services, stages (name, steps), steps and secrets (name, key, engine,
	// type, pull, origin) each container's id, number, name, image and pull, plus
	// the environment variables that its image or pull refers to as $NAME or
	// ${NAME...}, unless a secret of the container is injected under that name.
	// Everything else is dropped before encoding: the build's token and token_exp,
	// secret values, git, worker, environment, commands, entrypoints and
	// parameters (an origin's environment and parameters are sent as empty objects
	// when present, so that it still counts as present, as upstream's
	// Origin.Empty decides).
	Build any
	// FileName names the build in the report's origins and in errors. The Client
	// sends it as file_name (the service's default is "request"); the Command reads
	// the build from standard input, which pullcheck names "<stdin>", and ignores it.
	FileName string
	// Namespace is the build namespace (the runtime's namespace): pull secrets are
	// read from the cluster as the build Pod gets them. Empty: none are read (the
	// binary's kubeconfig context namespace is never used for it).
	Namespace string
	// PodsTemplate is the name of a PipelinePodsTemplate in Namespace (the
	// runtime's pods template name). It needs Namespace: without one, the Command
	// and the Client both return an error wrapping [ErrInvalidRequest] before
	// anything runs, as the service answers template_without_namespace. Empty: no
	// template, as go-vela/worker's empty pods template name.
	PodsTemplate string
	// PodsTemplateFile is the path of a PipelinePodsTemplate file (the runtime's
	// pods template file). Only the Command supports it: the service reads no file
	// of the caller, and the Client returns an error wrapping [ErrInvalidRequest].
	PodsTemplateFile string
	// IncludeOnStart checks on_start images now too, instead of reporting them
	// deferred.
	IncludeOnStart bool
	// Platform, such as "linux/arm64", also requires that platform in indexes.
	// Empty: none is required (pullcheck's default).
	Platform string
	// Runtime is the worker's runtime, "docker" or "kubernetes" (pullcheck's
	// --runtime). On "kubernetes" the build Pod's placeholder image is checked as
	// well, under the strictest pull policy, since every container starts with it.
	// Empty: "kubernetes" when Namespace, PodsTemplate or (through the Command)
	// PodsTemplateFile is set, else "docker".
	Runtime string
	// PlaceholderImage is the image the Kubernetes runtime starts every container
	// of the build Pod with until its step runs. go-vela/worker hard-codes
	// "kubernetes/pause:latest"; set this when a worker of yours uses another.
	// Empty: "docker.io/kubernetes/pause:latest".
	PlaceholderImage string
	// Images are images the build Pod pulls that are not containers of Build, such
	// as the worker's outputs container (the flag executor.outputs-image), which
	// runs in the build Pod and is pulled first. Each is checked beside the build's
	// images and named in the report by its Name (origin kind "image").
	Images []ExtraImage
	// Deadline bounds the check: images without an answer by then are
	// unreachable. 0: the default of the service or binary (60 s for the binary;
	// the service caps it by its --deadline). The context's deadline, by contrast,
	// abandons the check with [ErrDeadline].
	Deadline time.Duration
}

// ExtraImage is one image of [CheckRequest.Images].
type ExtraImage struct {
	// Reference is the image as the worker pulls it, such as
	// "registry.example.com/vela/outputs:1".
	Reference string
	// Policy is its pull policy: always, not_present, on_start or never (or
	// Kubernetes' Always, IfNotPresent, Never). Empty: always.
	Policy string
	// Name names the container that pulls it in the report's origins, such as
	// "outputs". Empty: the reference.
	Name string
}

func (i ExtraImage) name() string {
	if i.Name == "" {
		return i.Reference
	}
	return i.Name
}

func (i ExtraImage) policy() string {
	if i.Policy == "" {
		return "always"
	}
	return i.Policy
}

// checkImages refuses what neither transport can send: an image without a
// reference, a name with "=" (the binary's --named-image NAME=REF=POLICY), a
// reference or policy with a line break.
func checkImages(images []ExtraImage) error {
	for i, image := range images {
		switch {
		case strings.TrimSpace(image.Reference) == "":
			return newError(ErrInvalidRequest, nil, "Images[%d] has no Reference", i)
		case strings.Contains(image.Name, "="):
			return newError(ErrInvalidRequest, nil, "Images[%d].Name %s holds \"=\"", i, quote(image.Name))
		case strings.ContainsAny(image.Reference+image.Policy+image.Name, "\r\n"):
			return newError(ErrInvalidRequest, nil, "Images[%d] holds a line break", i)
		}
	}
	return nil
}

// Report is pullcheck's JSON report (`pullcheck check --format json`), plus the
// exit code the CLI would exit with.
type Report struct {
	// Images has one entry per image as written and policy, in the build's order.
	Images []Image `json:"images"`
	// Summary counts the containers by their image's outcome (an image used by
	// three containers counts three); see [Summary].
	Summary Summary `json:"summary"`
	// Warnings are things to know that are not about one image (e.g. a missing pull
	// secret). With [FailOpen], also the outage that was let through.
	Warnings []string `json:"warnings"`
	// VersionWarnings are, as data, where a node's runtime release would decide
	// differently from the releases pullcheck models (each is also worded among
	// Warnings); empty when no rule of the check depends on the release.
	VersionWarnings []VersionWarning `json:"version_warnings"`
	// ExitCode is 0 when every checked image is present, 1 when an image failed, 3
	// when nothing failed but an image is unverified (unreachable or unresolved).
	ExitCode int `json:"exit_code"`
	// Outage is the error that [FailOpen] turned into a warning; nil otherwise.
	Outage error `json:"-"`
}

// Image is one image of the report.
type Image struct {
	// Reference is the image as written in the build.
	Reference string `json:"reference"`
	// Substituted is the image after Vela's ${VAR} substitution, which is what was
	// checked; empty when there was nothing to substitute or its values are unknown
	// (status unresolved).
	Substituted string `json:"substituted"`
	// Canonical is domain/path[:tag][@digest]; empty when the reference did not
	// parse.
	Canonical string `json:"canonical"`
	// Policy is the pull policy: always, not_present, on_start or never.
	Policy string `json:"policy"`
	// Status is one of present, missing, unrunnable (pulls but cannot run on the
	// node's platform), no_access, denied, blocked, unreachable, unresolved (depends
	// on a ${VAR} known only when the build runs), invalid, deferred, skipped.
	Status string `json:"status"`
	// Reason says why, from a closed set documented in docs/reasons.md: one of the
	// Reason* constants. Act on it rather than on Detail, whose words may change.
	Reason string `json:"reason"`
	// Missing says what is missing, for status missing: tag, digest, repository or
	// platform.
	Missing string `json:"missing"`
	// Digest is the manifest digest the registry reported, for present.
	Digest string `json:"digest"`
	// Registry is the registry host that gave the answer.
	Registry string `json:"registry"`
	// Detail is pullcheck's explanation (never a secret); it may suggest close
	// tags.
	Detail string `json:"detail"`
	// Origins are every container that uses the image.
	Origins []Origin `json:"origins"`
	// Credential is the credential the answer was obtained with; nil for
	// anonymous.
	Credential *Credential `json:"credential"`
	// Error is the reference's parse error, for invalid references.
	Error *ReferenceError `json:"error"`
	// Cached is true when the answer came from the service's answer cache
	// (pullcheck serve --cache-present), not from a request of this check.
	Cached bool `json:"cached"`
	// CloseTags are, for ReasonTagNotFound, the repository's tags close to the one
	// asked for, best first.
	CloseTags []string `json:"close_tags"`
	// Remedies are what can be done about the failure, as data (Detail words them).
	Remedies []Remedy `json:"remedies"`
	// Attempts are every endpoint and credential asked, when more than one was.
	Attempts []Attempt `json:"attempts"`
	// ProviderFailures are the kubelet credential provider plugins that matched the
	// image and failed (ReasonCredentialProviderFailed when no other credential found
	// it).
	ProviderFailures []ProviderFailure `json:"provider_failures"`
	// Problems are, for ReasonInvalidContainer, ReasonUnknownPullPolicy and
	// ReasonUnresolvedVariable, each problem of the container with its position
	// apart from its words (Detail joins them, each "file:line:column: message").
	Problems []Problem `json:"problems"`
	// Variables are, for ReasonUnresolvedVariable, each variable the image waits for.
	Variables []Variable `json:"variables"`
	// Platforms are, for ReasonPlatformNotFound, the platforms the image index lists,
	// each "os/arch[/variant]" (linux/arm64/v8), in its order; for
	// ReasonPlatformMismatch, the one platform the single-platform image is built for.
	Platforms []string `json:"platforms"`
	// RetryAfter is, for ReasonRateLimited, the wait in whole seconds the registry asked
	// for in its 429's Retry-After header; nil when it sent none.
	RetryAfter *int64 `json:"retry_after"`
	// Template is, for ReasonTemplateStep, the name of the template the step uses
	// (its images are known only once the server expands it); empty otherwise.
	Template string `json:"template"`
	// Egress is, for ReasonEgressDenied (status blocked), what the egress policy
	// (--allow-registry, --deny-registry) refused and by which rule; nil otherwise.
	// Nothing was sent to that host.
	Egress *EgressRefusal `json:"egress"`
	// HTTPStatus is the HTTP status of the registry's answer the image's row reports
	// (200, 404, 401, 403, 429, 503, ...); 0 when no HTTP answer came (a refused
	// connection, a timeout, an egress refusal) or nothing was asked.
	HTTPStatus int `json:"http_status"`
	// RegistryErrors are the registry's error envelope in that answer (OCI
	// distribution spec, "Error Codes"), in order, at most the first 10; empty when
	// there was none (a HEAD's answer has no body).
	RegistryErrors []RegistryError `json:"registry_errors"`
	// FailedHost is, for a failure to authorize (the registry's ping, its challenge,
	// the credential check or the token request failed, for every image of that
	// registry), the host that failed and its role; nil otherwise. A token server
	// that is refused or unreachable is named here, not in Registry.
	FailedHost *FailedHost `json:"failed_host"`
}

// RegistryError is one entry of a registry's error envelope: the code as the
// registry sent it (MANIFEST_UNKNOWN, NAME_UNKNOWN, DENIED, UNAUTHORIZED,
// TOOMANYREQUESTS, or one the spec does not define, verbatim; UNKNOWN when none) and
// its message (empty when none). Both are clipped to one line.
type RegistryError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// FailedHost is the host whose failure kept the images of a registry from being
// checked (the JSON report's failed_host object).
type FailedHost struct {
	// Host is host[:port], as in the URL.
	Host string `json:"host"`
	// Role is RoleRegistry or RoleTokenServer.
	Role string `json:"role"`
	// HTTPStatus is the status that host answered when its answer was the failure:
	// the ping's or the Basic credential check's (RoleRegistry), the token request's
	// (RoleTokenServer: 401, 403, 500, the 200 of a reply without a token, ...); 0
	// when it gave no HTTP answer, was refused by the egress policy, or its answer
	// was not the failure (a challenge that cannot be used).
	HTTPStatus int `json:"http_status,omitempty"`
}

// The roles of a [FailedHost].
const (
	// RoleRegistry is the registry itself.
	RoleRegistry = "registry"
	// RoleTokenServer is the token server of the registry's Bearer challenge (its
	// realm).
	RoleTokenServer = "token_server"
)

// EgressRefusal is why the egress policy refused a connection: what the rule was
// applied to and which rule (the JSON report's egress object).
type EgressRefusal struct {
	// Matched is the host name or address the rule was applied to.
	Matched EgressMatch `json:"matched"`
	// Rule is the rule that refused it.
	Rule EgressRule `json:"rule"`
}

// EgressMatch is what an egress rule was applied to.
type EgressMatch struct {
	// Kind is "name" (a host name as in the URL) or "address" (an IP literal host,
	// or an address a name resolved to).
	Kind string `json:"kind"`
	// Host is, for kind "name", the host name (lower case, no trailing dot).
	Host string `json:"host"`
	// Address is, for kind "address", the IP address.
	Address string `json:"address"`
	// Name is, for kind "address", the name that resolved to it; empty for an IP
	// literal.
	Name string `json:"name"`
	// Port is the port the request was for, when known (not for a resolved name).
	Port *int `json:"port"`
}

// EgressRule is the rule that refused a connection.
type EgressRule struct {
	// Kind is "deny" (a deny rule matched) or "no_allow_rule" (allow rules exist and
	// none matched).
	Kind string `json:"kind"`
	// Pattern is, for kind "deny", the rule's pattern as written.
	Pattern string `json:"pattern"`
	// Default is, for kind "deny", whether it is one of pullcheck's default deny
	// rules (link-local and cloud metadata addresses).
	Default bool `json:"default"`
}

// VersionWarning is a rule of the check on which the runtime's releases disagree
// (docs/mirrors.md, "Which containerd releases").
type VersionWarning struct {
	// Kind is the rule: hosts_toml_without_host_table,
	// loopback_default_host_over_tls or loopback_default_host_over_plain_http (the
	// VersionWarning* constants).
	Kind string `json:"kind"`
	// Runtime is the runtime whose releases differ: containerd.
	Runtime string `json:"runtime"`
	// File is the file (a hosts.toml) or directory (the containerd hosts directory)
	// the rule applied to; empty when there was none.
	File string `json:"file"`
	// Host is the host:port it is about: the hosts.toml's server, or the loopback
	// registry.
	Host string `json:"host"`
	// Modelled are the releases whose rule pullcheck followed.
	Modelled []Releases `json:"modelled"`
	// Differing are the releases that decide otherwise.
	Differing []Releases `json:"differing"`
}

// The kinds of a [VersionWarning].
const (
	// VersionWarningHostsTomlWithoutHostTable: a hosts.toml with server = and no
	// [host] table, which containerd 1.6 and 1.7.0-1.7.31 ignore.
	VersionWarningHostsTomlWithoutHostTable = "hosts_toml_without_host_table"
	// VersionWarningLoopbackDefaultHostOverTLS: a loopback registry's default host
	// answered over HTTPS, which containerd 1.6.9-1.6.24 and 1.7.0-1.7.6 ask over
	// plain HTTP only.
	VersionWarningLoopbackDefaultHostOverTLS = "loopback_default_host_over_tls"
	// VersionWarningLoopbackDefaultHostOverPlainHTTP: a loopback registry's default
	// host answered over plain HTTP, which containerd 1.6.0-1.6.8 ask over verified
	// HTTPS only.
	VersionWarningLoopbackDefaultHostOverPlainHTTP = "loopback_default_host_over_plain_http"
)

// Releases is a run of releases, both ends included.
type Releases struct {
	// First is the first release, e.g. "1.7.32".
	First string `json:"first"`
	// Last is the last release; nil for "and every later release".
	Last *string `json:"last"`
}

// ProviderFailure is a kubelet credential provider plugin that failed for an image.
type ProviderFailure struct {
	// Provider is the plugin's name in the CredentialProviderConfig.
	Provider string `json:"provider"`
	// Kind is how it failed: missing, spawn, exited, timed_out, output_too_large,
	// bad_response, api_version_mismatch, invalid_cache_key_type or
	// service_account_token_unsupported (docs/reasons.md).
	Kind string `json:"kind"`
}

// Problem is one problem of a container: where, and what.
type Problem struct {
	// At is where; nil when unknown, and always nil for a container of a build
	// (its JSON is the package's own encoding, which no Vela user sees): Message
	// and the image's Origins name the container instead.
	At *Position `json:"at"`
	// Message is what is wrong, without the position.
	Message string `json:"message"`
}

// Position is a place in an input text.
type Position struct {
	// File names the input.
	File string `json:"file"`
	// Line is the 1-based line where the value is used; 0 if unknown.
	Line int `json:"line"`
	// Column is the 1-based column, in characters; 0 if unknown.
	Column int `json:"column"`
}

// Variable is one ${VAR} whose value is known only when the build runs.
type Variable struct {
	// Name is the variable's name, without ${}.
	Name string `json:"name"`
	// Field is "image" or "pull".
	Field string `json:"field"`
	// Source says where its value would come from.
	Source VariableSource `json:"source"`
	// DefaultIgnored is true for a default (${TAG:-1}) the compiler drops.
	DefaultIgnored bool `json:"default_ignored"`
}

// VariableSource is where a variable's value would come from: Kind is "secret"
// (Secret names the secret's source), "server" (a VELA_* the Vela server sets),
// "worker" (a credential the Vela worker sets when the step runs, such as
// VELA_NETRC_PASSWORD),
// "unrendered" (a PARAMETER_* whose value pullcheck does not render as Vela does),
// "parameter_case" (a PARAMETER_* that parameters keys equal but for case, Keys, set
// to different values, so Vela's map order picks one at random),
// "global_environment_withheld" (set only in the pipeline's environment, which
// metadata.environment does not give to this kind of container) or "nowhere" (set
// nowhere in the pipeline).
type VariableSource struct {
	// Kind is secret, server, worker, unrendered, parameter_case,
	// global_environment_withheld or nowhere.
	Kind string `json:"kind"`
	// Secret is the secret's source, for kind secret.
	Secret string `json:"secret"`
	// Keys are the parameters' keys as written, for kind parameter_case.
	Keys []string `json:"keys,omitempty"`
}

// Remedy is one thing that can be done about a failure: Kind is one of trust_ca,
// allow_insecure, give_credential (Host is the registry's host[:port]) or
// include_on_start.
type Remedy struct {
	// Kind names the remedy.
	Kind string `json:"kind"`
	// Host is the registry, for trust_ca, allow_insecure and give_credential.
	Host string `json:"host"`
}

// Attempt is one endpoint and credential asked about an image.
type Attempt struct {
	// Endpoint is the endpoint asked: host[:port], with its API path when not /v2/.
	Endpoint string `json:"endpoint"`
	// Registry is the endpoint's host, host[:port].
	Registry string `json:"registry"`
	// Credential is the credential it was asked with; nil for anonymous.
	Credential *Credential `json:"credential"`
	// Status is the answer's status.
	Status string `json:"status"`
	// Reason is the answer's reason (a Reason* constant).
	Reason string `json:"reason"`
	// Missing says what is missing, for status missing; empty otherwise.
	Missing string `json:"missing,omitempty"`
	// CloseTags are, for ReasonTagNotFound, the repository's tags close to the one
	// asked for, best first.
	CloseTags []string `json:"close_tags,omitempty"`
	// Platforms are, for ReasonPlatformNotFound, the platforms the index lists; for
	// ReasonPlatformMismatch, the one the single-platform image is built for.
	Platforms []string `json:"platforms,omitempty"`
	// RetryAfter is, for ReasonRateLimited, the wait in whole seconds, when given.
	RetryAfter *int64 `json:"retry_after,omitempty"`
	// Detail is the answer in words.
	Detail string `json:"detail"`
	// Chosen is true on the one attempt that decided the image's status and reason.
	Chosen bool `json:"chosen"`
}

// The values of Image.Reason and Attempt.Reason (docs/reasons.md says what each
// means). New values may be added; a value's name never changes.
const (
	ReasonFound                 = "found"
	ReasonCached                = "cached"
	ReasonTagNotFound           = "tag_not_found"
	ReasonDigestNotFound        = "digest_not_found"
	ReasonManifestUnknown       = "manifest_unknown"
	ReasonRepositoryNotFound    = "repository_not_found"
	ReasonPlatformNotFound      = "platform_not_found"
	ReasonPlatformMismatch      = "platform_mismatch"
	ReasonUnauthorizedAnonymous = "unauthorized_anonymous"
	ReasonUnauthorized          = "unauthorized"
	ReasonCredentialsRequired   = "credentials_required"
	ReasonUnsupportedAuth       = "unsupported_auth"
	ReasonCredentialsRejected   = "credentials_rejected"
	ReasonAccessDenied          = "access_denied"
	ReasonTLSUntrusted          = "tls_untrusted"
	ReasonRateLimited           = "rate_limited"
	ReasonServerError           = "server_error"
	ReasonNotARegistry          = "not_a_registry"
	// ReasonBadTokenReply: the registry's token server answered 2xx without a usable
	// token (Image.FailedHost names it, with the status it answered).
	ReasonBadTokenReply          = "bad_token_reply"
	ReasonDigestMismatch         = "digest_mismatch"
	ReasonTLSFailed              = "tls_failed"
	ReasonConnectionRefused      = "connection_refused"
	ReasonConnectionFailed       = "connection_failed"
	ReasonTimeout                = "timeout"
	ReasonNameNotResolved        = "name_not_resolved"
	ReasonDeadlineExceeded       = "deadline_exceeded"
	ReasonClientConfig           = "client_config"
	ReasonCredentialHelperFailed = "credential_helper_failed"
	// ReasonCredentialProviderFailed: a kubelet credential provider plugin matched the
	// image and failed (Image.ProviderFailures); the status is what the registries
	// answered to the other credentials.
	ReasonCredentialProviderFailed = "credential_provider_failed"
	ReasonNoEndpoint               = "no_endpoint"
	ReasonEgressDenied             = "egress_denied"
	ReasonBlockedByConfig          = "blocked_by_config"
	ReasonUnpullableByConfig       = "unpullable_by_config"
	ReasonInvalidReference         = "invalid_reference"
	ReasonUnknownPullPolicy        = "unknown_pull_policy"
	ReasonInvalidContainer         = "invalid_container"
	ReasonUnresolvedVariable       = "unresolved_variable"
	ReasonTemplateStep             = "template_step"
	ReasonInitStep                 = "init_step"
	ReasonNeverPulled              = "never_pulled"
	ReasonExempt                   = "exempt"
	ReasonDeferredOnStart          = "deferred_on_start"
)

// Refusal is why Vela's compiler (go-vela/server v0.28.8) refuses a pipeline or a
// compiled build: the service's error "refusal" (docs/reasons.md, "Refusals"). Kind
// is one of the Refusal* constants; the other fields are set as the kind has them.
type Refusal struct {
	// Kind is the check that refuses, e.g. RefusalDuplicateName.
	Kind string `json:"kind"`
	// Container is "step", "service" or "secret" (an origin), where the kind names one.
	Container string `json:"container,omitempty"`
	// Name is the container's (or, for RefusalDuplicateStage and
	// RefusalStageNeedsItself, the stage's) name.
	Name string `json:"name,omitempty"`
	// Stage is the stage of a stage step; empty otherwise.
	Stage string `json:"stage,omitempty"`
	// Step is the step's name, for RefusalNoCommands, RefusalMissingTemplate,
	// RefusalRenderInlineTemplateStep and the limit and substitution kinds.
	Step string `json:"step,omitempty"`
	// Template is the template's name; TemplateType its type as written.
	Template     string `json:"template,omitempty"`
	TemplateType string `json:"template_type,omitempty"`
	// TemplateFormat is the template's format as written
	// (RefusalUnsupportedTemplateFormat).
	TemplateFormat string `json:"template_format,omitempty"`
	// ReportAs is the `report_as` two steps share (RefusalDuplicateReportAs), Step
	// the second of them and TargetedBy the first.
	ReportAs   string `json:"report_as,omitempty"`
	TargetedBy string `json:"targeted_by,omitempty"`
	// Variable is the environment variable whose value is refused (RefusalEnvironment;
	// empty for a list item), Found what was found there or in a field.
	Variable string `json:"variable,omitempty"`
	Found    string `json:"found,omitempty"`
	// Field is the path of a field of the wrong type (RefusalWrongType), of a null
	// item (RefusalNullItem, with its Container; RefusalNullTemplate) or of a field whose decoder failed
	// (RefusalDecode), Expected the Go type it takes (yaml.v3's or encoding/json's
	// name: "bool", "[]string", "yaml.Git", ...); JSON says the text was a compiled
	// build. For a YAML scalar, Found is its resolved tag ("!!int") and Value the
	// value as yaml.v3 quotes it ("`5`").
	Field    string `json:"field,omitempty"`
	Expected string `json:"expected,omitempty"`
	Value    string `json:"value,omitempty"`
	JSON     bool   `json:"json,omitempty"`
	// Failure is the error of a Vela type's own decoder (RefusalDecode).
	Failure *DecodeFailure `json:"failure,omitempty"`
	// Limit is the limit a count is over (RefusalReportAsLimit,
	// RefusalGitTokenRepositories, RefusalGitTokenLimit), Counted the count of
	// RefusalGitTokenRepositories.
	Limit   int `json:"limit,omitempty"`
	Counted int `json:"counted,omitempty"`
	// Error is drone/envsubst's error (RefusalSubstitution), e.g.
	// "missing_closing_brace"; Text the substituted text that no longer decodes
	// (RefusalSubstitutedStep, whose Field is the field, "image").
	Error string `json:"error,omitempty"`
	Text  string `json:"text,omitempty"`
	// First is where the first of two containers of one name is named
	// (RefusalDuplicateName); nil when unknown. Its File is empty.
	First *Position `json:"first,omitempty"`
}

// DecodeFailure is an error that stops the decoding (RefusalDecode): of one of
// go-vela/server's UnmarshalYAML methods, Error one of "string_slice",
// "ulimit_equals", "ulimit_colons", "parse_int", "volume_colons",
// "step_secret_slice", "no_secret_source_or_target", "stage_map"; or of go-yaml v3
// itself, "tag" (a scalar whose core tag Tag its text Text, of tag Found, is not:
// `!!int alpine`), "base64" (a !!binary that is not base64), "yaml_version" (a %YAML
// directive Major.Minor other than 1.1). Ulimit, Volume, Text, OutOfRange, Found, Tag,
// Major and Minor carry the values of those that have them.
type DecodeFailure struct {
	Error      string `json:"error"`
	Ulimit     string `json:"ulimit,omitempty"`
	Volume     string `json:"volume,omitempty"`
	Text       string `json:"text,omitempty"`
	OutOfRange bool   `json:"out_of_range,omitempty"`
	Found      string `json:"found,omitempty"`
	Tag        string `json:"tag,omitempty"`
	Major      int    `json:"major,omitempty"`
	Minor      int    `json:"minor,omitempty"`
}

// The kinds of Refusal, one per check of Vela's compiler.
const (
	RefusalNoVersion                 = "no_version"
	RefusalLegacyVersion             = "legacy_version"
	RefusalStagesAndSteps            = "stages_and_steps"
	RefusalNothingToRun              = "nothing_to_run"
	RefusalRenderInlineTemplateStep  = "render_inline_template_step"
	RefusalNoName                    = "no_name"
	RefusalNoImage                   = "no_image"
	RefusalNoCommands                = "no_commands"
	RefusalDuplicateName             = "duplicate_name"
	RefusalDuplicateStage            = "duplicate_stage"
	RefusalEnvironment               = "environment"
	RefusalMissingTemplate           = "missing_template"
	RefusalUnsupportedTemplateType   = "unsupported_template_type"
	RefusalWrongType                 = "wrong_type"
	RefusalNullItem                  = "null_item"
	RefusalNullTemplate              = "null_template"
	RefusalDuplicateKey              = "duplicate_key"
	RefusalDecode                    = "decode"
	RefusalStringSliceMap            = "string_slice_map"
	RefusalStageNeedsItself          = "stage_needs_itself"
	RefusalDuplicateReportAs         = "duplicate_report_as"
	RefusalUnsupportedTemplateFormat = "unsupported_template_format"
	RefusalReportAsLimit             = "report_as_limit"
	RefusalGitTokenRepositories      = "git_token_repositories"
	RefusalGitTokenLimit             = "git_token_limit"
	RefusalSubstitution              = "substitution"
	RefusalSubstitutedStep           = "substituted_step"
	// RefusalSubstringPanic is no refusal but a panic of Vela's compiler (HTTP 500):
	// a negative substring length in Field of Step.
	RefusalSubstringPanic = "substring_panic"
	// RefusalSubstitutionLimit is pullcheck's own bound (Error too_deep,
	// too_large or trim_too_long), not Vela's.
	RefusalSubstitutionLimit = "substitution_limit"
)

// Origin is one container that uses an image.
type Origin struct {
	// File names the input: FileName (Client), "<stdin>" (Command).
	File string `json:"file"`
	// Line is the 1-based line of the image in the JSON the package sent (its
	// own encoding of the build, which no Vela user sees; [Report.Err] names the
	// container instead); 0 if unknown.
	Line int `json:"line"`
	// Column is the 1-based column in that JSON, in characters; 0 if unknown.
	Column int `json:"column"`
	// Kind is step, service or secret (a secret's origin container).
	Kind string `json:"kind"`
	// Name is the container's name.
	Name string `json:"name"`
	// Stage is the stage's name, for stage steps.
	Stage string `json:"stage"`
}

// Credential names where the credential that answered came from; never the secret.
type Credential struct {
	// Source is "pull secret NAME (...)", a node file's path, or a credential helper.
	Source string `json:"source"`
	// Key is the key as written, such as an auths key.
	Key string `json:"key"`
	// Username is the user name, when there is one.
	Username string `json:"username"`
}

// ReferenceError is why a reference is invalid.
type ReferenceError struct {
	// Kind is empty, invalid_format, uppercase, name_too_long, hex64,
	// digest_invalid, no_registry or port_out_of_range.
	Kind string `json:"kind"`
	// Message is the parser's message.
	Message string `json:"message"`
}

// Summary counts the report's image uses: each container (or [ExtraImage]) that
// uses an image counts once, so an image used by three steps counts three, and the
// counts are over the Origins of Images, not over its entries. len(report.Images)
// and len(report.Failed()) count entries; Summary.Total and Summary.Failed count
// the containers behind them (an entry without origins counts one).
type Summary struct {
	// Total counts every use: the sum of the fields below but TemplateSteps.
	Total int `json:"total"`
	// Present counts the uses of present images.
	Present int `json:"present"`
	// Failed counts the uses of missing, no_access, denied, unrunnable, blocked and
	// invalid images (IsFailure).
	Failed int `json:"failed"`
	// Unverified counts the uses of unreachable and unresolved images.
	Unverified int `json:"unverified"`
	// Skipped counts the uses of skipped images (never, #init).
	Skipped int `json:"skipped"`
	// Deferred counts the uses of on_start images not checked yet.
	Deferred int `json:"deferred"`
	// TemplateSteps counts steps that use a template, whose images only the server
	// knows; they are not checked and are counted in no other field.
	TemplateSteps int `json:"template_steps"`
}

// IsFailure reports whether a status counts as failed, as pullcheck decides:
// missing, no_access, denied, unrunnable, blocked or invalid.
func IsFailure(status string) bool {
	switch status {
	case "missing", "no_access", "denied", "unrunnable", "blocked", "invalid":
		return true
	}
	return false
}

// Failed returns the images whose status is missing, no_access, denied, unrunnable, blocked or
// invalid, in report order.
func (r *Report) Failed() []Image {
	if r == nil {
		return nil
	}
	var failed []Image
	for _, image := range r.Images {
		if IsFailure(image.Status) {
			failed = append(failed, image)
		}
	}
	return failed
}

// Unverified returns the images that are neither present nor failed nor left
// out on purpose (deferred, skipped): today unreachable and unresolved, and any status a newer
// pullcheck adds for an image it cannot check yet. In report order.
func (r *Report) Unverified() []Image {
	if r == nil {
		return nil
	}
	var out []Image
	for _, image := range r.Images {
		switch image.Status {
		case "present", "deferred", "skipped":
			continue
		}
		if !IsFailure(image.Status) {
			out = append(out, image)
		}
	}
	return out
}

// Err returns nil when no image failed, and otherwise a *[FailedError] whose
// message lists every failed image, one per line: its containers (kind, name and
// stage, as the pipeline names them: the positions are in the package's own JSON,
// which no Vela user sees), the image, and the reason. errors.Is(err,
// [ErrImagesFailed]) is true for it.
func (r *Report) Err() error {
	failed := r.Failed()
	if len(failed) == 0 {
		return nil
	}
	return &FailedError{Images: failed}
}

// ErrImagesFailed matches the error of [Report.Err]: some image failed.
var ErrImagesFailed = errors.New("pullcheck: images failed")

// FailedError is [Report.Err]'s error: the failed images.
type FailedError struct {
	// Images are the failed images, in report order.
	Images []Image
}

// Error lists every failed image, one per line, after a first line that counts
// them:
//
//	pullcheck: 2 images failed:
//	step "test" (stage "build"): image "alpine:3.91": missing tag: ...
//	image "outputs": image "registry.example.com/vela/outputs:9": missing tag: ...
func (e *FailedError) Error() string {
	var b strings.Builder
	n := len(e.Images)
	if n == 1 {
		b.WriteString("pullcheck: 1 image failed:")
	} else {
		fmt.Fprintf(&b, "pullcheck: %d images failed:", n)
	}
	for _, image := range e.Images {
		b.WriteString("\n")
		b.WriteString(describeContainers(image.Origins))
		fmt.Fprintf(&b, ": image %s: %s", quote(image.Reference), reason(image))
	}
	return b.String()
}

// Is makes errors.Is(err, ErrImagesFailed) true.
func (e *FailedError) Is(target error) bool { return target == ErrImagesFailed }

func describeContainers(origins []Origin) string {
	if len(origins) == 0 {
		return "(no container)"
	}
	parts := make([]string, 0, len(origins))
	for _, o := range origins {
		kind := o.Kind
		if kind == "secret" {
			kind = "secret origin"
		}
		s := kind + " " + quote(o.Name)
		if o.Stage != "" {
			s += " (stage " + quote(o.Stage) + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func reason(image Image) string {
	r := strings.ReplaceAll(image.Status, "_", " ")
	if image.Status == "missing" && image.Missing != "" {
		r += " " + image.Missing
	}
	if image.Detail != "" {
		r += ": " + clean(image.Detail)
	}
	return r
}

// quote quotes a name or reference for one log line (control characters escaped).
func quote(s string) string { return strconv.Quote(s) }

// clean escapes what could split or repaint a log line: control characters and
// Unicode bidirectional formatting characters.
func clean(s string) string {
	unsafe := func(r rune) bool {
		return unicode.IsControl(r) || r == '\u061c' || r == '\u200e' || r == '\u200f' ||
			(r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069')
	}
	if strings.IndexFunc(s, unsafe) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unsafe(r) {
			fmt.Fprintf(&b, "\\u%04x", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// cleanLines is [clean] for each line of a message of several: the line breaks
// stay real, everything else that could repaint a log line is escaped.
func cleanLines(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, line := range lines {
		lines[i] = clean(line)
	}
	return strings.Join(lines, "\n")
}

// The errors of a check that gave no report, for errors.Is. Each error a Checker
// returns wraps exactly one of them.
var (
	// ErrUnavailable: pullcheck could not be reached: the service refused or
	// dropped the connection, answered 502, 503 (too many checks in flight) or 504,
	// or the binary could not be started.
	ErrUnavailable = errors.New("pullcheck unavailable")
	// ErrStatus: the service answered with a status other than 200, or the binary
	// exited with 2 (a usage or configuration error); a *[StatusError] carries the
	// message. 502, 503 and 504 match [ErrUnavailable] too.
	ErrStatus = errors.New("pullcheck refused the check")
	// ErrDeadline: the context's deadline passed before the answer came. Such an
	// error matches [context.DeadlineExceeded] too.
	ErrDeadline = errors.New("pullcheck check deadline exceeded")
	// ErrInvalidAnswer: the answer was not a report: undecodable JSON, too large, or
	// the binary ended with an unexpected exit code or signal.
	ErrInvalidAnswer = errors.New("pullcheck gave an invalid answer")
	// ErrInvalidRequest: the request could not be built: the build does not
	// encode to a JSON object, or it asks what the transport cannot do.
	ErrInvalidRequest = errors.New("pullcheck request invalid")
)

// checkError is an error of one of the sentinel kinds, with the cause it wraps.
type checkError struct {
	kind  error
	cause error
	msg   string
}

func (e *checkError) Error() string {
	if e.cause != nil {
		return e.kind.Error() + ": " + e.msg + ": " + e.cause.Error()
	}
	return e.kind.Error() + ": " + e.msg
}

func (e *checkError) Is(target error) bool { return target == e.kind }

func (e *checkError) Unwrap() error { return e.cause }

func newError(kind error, cause error, format string, args ...any) error {
	return &checkError{kind: kind, cause: cause, msg: fmt.Sprintf(format, args...)}
}

// StatusError is a refusal: a non-200 answer of the service, or the binary's exit
// code 2, with the message pullcheck gave. errors.Is(err, [ErrStatus]) is true for
// it (and [ErrUnavailable] for HTTP 502, 503 and 504).
type StatusError struct {
	// HTTPStatus is the service's HTTP status; 0 for the Command.
	HTTPStatus int
	// ExitCode is the binary's exit code; 0 for the Client.
	ExitCode int
	// Message is pullcheck's message (the service's error.message, or the
	// binary's standard error, at most 64 KiB); it may have several lines.
	Message string
	// Line and Column locate the problem in the build JSON the package sent, when
	// known. That JSON is the package's own encoding, so Error does not show them.
	Line, Column int
	// Refusal is set when the service answered 400 because Vela's compiler refuses
	// the build (the error's "refusal"): why, as data. The Command's binary gives
	// only the message (exit code 2), so it is nil there.
	Refusal *Refusal
	// Kind is the service's error.kind (snake_case: "invalid_name",
	// "template_without_namespace", "nothing_to_check", "lookup", "wrong_type", ...;
	// every value in docs/service.md); empty for the Command and for answers without
	// one.
	Kind string
	// Field is the request field the service's error is about (error.field: a JSON
	// path such as "namespace" or "images[0].reference"); empty when none.
	Field string
	// Inputs lists, for Kind "nothing_to_check", each text and what it held
	// (error.inputs).
	Inputs []EmptyInput
	// Lookup is, for Kind "lookup", the failed Kubernetes lookup (error.lookup).
	Lookup *LookupFailure
	// RequestID is the service's X-Request-Id, for its logs.
	RequestID string
	// RetryAfter is the service's Retry-After (503), when given.
	RetryAfter time.Duration
}

// EmptyInput is one text of a "nothing_to_check" error: its name, what it was read
// as ("pipeline", "manifests", "build") and what it held instead of an image
// ("no_image", or "templates" with the counts of template steps and render_inline
// templates).
type EmptyInput struct {
	Name            string `json:"name"`
	ReadAs          string `json:"read_as"`
	Held            string `json:"held"`
	TemplateSteps   int    `json:"template_steps,omitempty"`
	InlineTemplates int    `json:"inline_templates,omitempty"`
}

// LookupFailure is a failed Kubernetes lookup of a "lookup" error: what went wrong
// (Error: "forbidden", "template_not_found", "api", "malformed", "unreachable",
// "unauthorized", "template_api_missing", "not_kubernetes", "template_file",
// "config") and, where known, the object (Resource, Name, Namespace) and the API
// server's HTTP Code (0 when none).
type LookupFailure struct {
	Error     string `json:"error"`
	Resource  string `json:"resource,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Code      int    `json:"code,omitempty"`
}

// checkTemplate refuses a PodsTemplate without a Namespace, for the Command and the
// Client alike.
func checkTemplate(req CheckRequest) error {
	if req.PodsTemplate != "" && req.Namespace == "" {
		return newError(ErrInvalidRequest, nil,
			"PodsTemplate %s needs Namespace: the template is read from the build namespace", quote(req.PodsTemplate))
	}
	return nil
}

// Error says who refused, with the message and position.
func (e *StatusError) Error() string {
	var b strings.Builder
	b.WriteString(ErrStatus.Error())
	if e.HTTPStatus != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.HTTPStatus)
	} else {
		fmt.Fprintf(&b, ": exit code %d", e.ExitCode)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(cleanLines(e.Message))
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", clean(e.RequestID))
	}
	return b.String()
}

// Is matches [ErrStatus], and [ErrUnavailable] for HTTP 502, 503 and 504.
func (e *StatusError) Is(target error) bool {
	switch target {
	case ErrStatus:
		return true
	case ErrUnavailable:
		return e.HTTPStatus == 502 || e.HTTPStatus == 503 || e.HTTPStatus == 504
	}
	return false
}

// contextError wraps ctx's error: a deadline as ErrDeadline (matching both), a
// cancellation as itself.
func contextError(ctx context.Context, what string) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return newError(ErrDeadline, err, "%s", what)
	}
	return fmt.Errorf("pullcheck: %s: %w", what, err)
}

// FailOpen wraps a Checker so that an outage of pullcheck does not fail the build:
// any error except a canceled context becomes a report without images, with
// ExitCode 3 (unverified), the error in Outage and a warning saying the images were
// not checked. Failed images still fail: [Report.Err] is nil only when no image
// failed. Without FailOpen, such errors are returned, and the worker decides.
func FailOpen(c Checker) Checker { return failOpen{c} }

type failOpen struct{ inner Checker }

func (f failOpen) Check(ctx context.Context, req CheckRequest) (*Report, error) {
	report, err := f.inner.Check(ctx, req)
	if err == nil {
		return report, nil
	}
	if errors.Is(err, context.Canceled) {
		return nil, err
	}
	return &Report{
		Images:   []Image{},
		Warnings: []string{"images not checked, the build goes on (fail open): " + err.Error()},
		ExitCode: 3,
		Outage:   err,
	}, nil
}
