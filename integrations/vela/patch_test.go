package pullcheck

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The go-vela/worker patch (worker/image-check.patch) cannot be built here (the
// worker's modules are not available offline), so its use of this package is
// checked against the package itself: every pullcheck.Name it adds is an exported
// name of the package, every field of its pullcheck.WorkerConfig literal is a
// field of WorkerConfig, and the methods it calls exist with the arity it uses.
// The calls themselves are type-checked where they are written alike:
// TestWorkerPatchCallsTypeCheck.
func TestWorkerPatchUsesOnlyThePublicAPI(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("worker", "image-check.patch"))
	if err != nil {
		t.Fatal(err)
	}
	var added []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "+") && !strings.HasPrefix(line, "+++") {
			added = append(added, line[1:])
		}
	}
	code := strings.Join(added, "\n")

	exported, fields := packageAPI(t)
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`\bpullcheck\.([A-Za-z_][A-Za-z0-9_]*)`).FindAllStringSubmatch(code, -1) {
		used[m[1]] = true
	}
	var names []string
	for name := range used {
		names = append(names, name)
		if !exported[name] {
			t.Errorf("the patch uses pullcheck.%s, which the package does not export", name)
		}
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "NewWorkerCheck,WorkerCheck,WorkerConfig" {
		t.Errorf("the patch uses %v; update this test and TestWorkerPatchCallsTypeCheck together", names)
	}
	literal := regexp.MustCompile(`(?s)pullcheck\.WorkerConfig\{(.*?)\n\t\}\)`).FindStringSubmatch(code)
	if literal == nil {
		t.Fatal("no pullcheck.WorkerConfig literal in the patch")
	}
	var set []string
	for _, m := range regexp.MustCompile(`(?m)^\s*([A-Z][A-Za-z]*):`).FindAllStringSubmatch(literal[1], -1) {
		set = append(set, m[1])
		if !fields[m[1]] {
			t.Errorf("WorkerConfig has no field %s", m[1])
		}
	}
	if len(set) < 8 {
		t.Errorf("fields read from the literal: %v", set)
	}
	if !strings.Contains(code, "c.imageCheck.Run(ctx, c.pipeline, _log)") {
		t.Error("the patch's call in AssembleBuild changed; update TestWorkerPatchCallsTypeCheck")
	}
}

// packageAPI parses the package's own files: its exported top-level names, and the
// fields of WorkerConfig.
func packageAPI(t *testing.T) (map[string]bool, map[string]bool) {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	exported, fields := map[string]bool{}, map[string]bool{}
	for _, pkg := range pkgs {
		for _, file := range pkg.Files {
			for name, obj := range file.Scope.Objects {
				if ast.IsExported(name) {
					exported[name] = true
				}
				if name != "WorkerConfig" {
					continue
				}
				spec, ok := obj.Decl.(*ast.TypeSpec)
				if !ok {
					continue
				}
				if st, ok := spec.Type.(*ast.StructType); ok {
					for _, f := range st.Fields.List {
						for _, n := range f.Names {
							fields[n.Name] = true
						}
					}
				}
			}
		}
	}
	return exported, fields
}

// The patch's calls as it writes them, with stand-ins of the worker's values of
// the same shapes (*pipeline.Build is any JSON-encodable value; *api.Log has
// AppendData), so that the compiler checks them against the package.
func TestWorkerPatchCallsTypeCheck(t *testing.T) {
	var flags = map[string]any{}
	str := func(name string) string { s, _ := flags[name].(string); return s }
	imageCheck, err := NewWorkerCheck(WorkerConfig{
		URL:              str("executor.image-check-url"),
		Token:            str("executor.image-check-token"),
		Binary:           str("executor.image-check-binary"),
		Timeout:          0,
		FailOpen:         false,
		RuntimeDriver:    str("runtime.driver"),
		Namespace:        str("runtime.namespace"),
		PodsTemplate:     str("runtime.pods-template-name"),
		PodsTemplateFile: str("runtime.pods-template-file"),
		OutputsImage:     str("executor.outputs-image"),
	})
	if err != nil || imageCheck != nil {
		t.Fatalf("unconfigured: %v, %v", imageCheck, err)
	}
	type client struct{ imageCheck *WorkerCheck }
	c := client{imageCheck: imageCheck}
	var pipeline = &struct {
		ID string `json:"id"`
	}{ID: "octocat_hello_1"}
	_log := &logBuffer{}
	ctx := context.Background()
	if err := c.imageCheck.Run(ctx, pipeline, _log); err != nil || len(_log.data) != 0 {
		t.Errorf("off: %v, %q", err, _log.data)
	}
}
