// Package pullcheck puts pullcheck's image check at the start of a Vela build.
//
// A Vela worker (go-vela/worker) hands the compiled build it is about to run to a
// [Checker] just before the Kubernetes runtime creates the build Pod, and gets back
// every image the build will pull with its status: present, missing (a tag, a
// digest or a repository), no_access, denied, blocked, unreachable, unresolved (a
// ${VAR} known only when the build runs), invalid, deferred (on_start) or skipped
// (never, #init). [Report.Err] turns the failed ones
// into one error that lists them all, one per line, for the init step's log.
//
// Two transports implement [Checker]:
//
//   - [Client] posts the build to `pullcheck serve` (POST /v1/checks), which answers
//     from warm connections and cached registry tokens;
//   - [Command] runs the `pullcheck` binary (`pullcheck check --format json ... --build -`)
//     with the build on its standard input.
//
// Both send the same JSON report shape that `pullcheck check --format json` prints.
// Neither sends the build's `token` (the SCM installation token) nor any secret
// value: the build is reduced to the fields that say which images it pulls (see
// [CheckRequest.Build]) before it is encoded.
//
// Errors that are not about an image (the service down, a non-200 answer, a
// deadline, an answer that cannot be read) are distinct and wrapped, for
// [errors.Is] with [ErrUnavailable], [ErrStatus], [ErrDeadline], [ErrInvalidAnswer]
// and [ErrInvalidRequest]. The caller decides whether such an outage fails the
// build; [FailOpen] makes it a warning. A failed image is never ignored that way.
//
// [NewWorkerCheck] and [WorkerCheck.Run] are the whole of a worker's side: built once
// from the worker's flags, run in the executor's AssembleBuild (the patch in
// integrations/vela/worker does this for go-vela/worker v0.28.1).
//
// The package uses the standard library only and builds with Go 1.19.
package pullcheck
