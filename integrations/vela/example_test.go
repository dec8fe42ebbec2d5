package pullcheck_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	pullcheck "pullcheck/integrations/vela"
)

// The worker's call, in the executor's AssembleBuild just before the runtime's
// AssembleBuild: every image string is final there and nothing exists yet. The
// build is the *pipeline.Build the executor holds (here its JSON); namespace and
// pods template are the Kubernetes runtime's configuration.
func Example() {
	build := json.RawMessage(`{"id": "octocat_hello-world_1", "version": "1",
		"steps": [{"id": "step_octocat_hello-world_1_test", "name": "test",
		           "image": "golang:1.22", "pull": "always"}]}`)

	// An outage of pullcheck lets the build go on with a warning; a missing image
	// fails it.
	checker := pullcheck.FailOpen(pullcheck.NewClient(
		"https://pullcheck.vela.svc:8080", os.Getenv("PULLCHECK_API_TOKEN")))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	report, err := checker.Check(ctx, pullcheck.CheckRequest{
		Build:        build,
		FileName:     "build.json",
		Namespace:    "vela",
		PodsTemplate: "vela-pods",
	})
	if err != nil { // the build was canceled
		fmt.Println(err)
		return
	}
	// In the worker: _log.AppendData(...) on the init step's log.
	for _, warning := range report.Warnings {
		fmt.Printf("> pullcheck: %s\n", warning)
	}
	if err := report.Err(); err != nil {
		// Every failed image at once, one per line, with file:line:column.
		fmt.Println(err)
		// The executor returns it: the init step fails, DestroyBuild cleans up.
		_ = fmt.Errorf("unable to assemble build: %w", err)
		return
	}
	if errors.Is(report.Outage, pullcheck.ErrUnavailable) {
		fmt.Println("> pullcheck was down; images not checked")
	}
}

// The same check through the binary, with the node's credentials.
func ExampleNewCommand() {
	checker := pullcheck.NewCommand("/usr/local/bin/pullcheck",
		"--docker-config", "/etc/pullcheck/docker")
	report, err := checker.Check(context.Background(), pullcheck.CheckRequest{
		Build:            json.RawMessage(`{"id": "b", "steps": []}`),
		Namespace:        "vela",
		PodsTemplateFile: "/etc/vela/pods-template.yaml",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(report.Summary.Failed, "failed")
}
