package pullcheck

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// buildJSON encodes the build reduced to what says which images it pulls (see
// [CheckRequest.Build]): never the token, a secret value, commands or the build's
// environment.
func buildJSON(build any) (json.RawMessage, error) {
	var raw []byte
	switch b := build.(type) {
	case nil:
		return nil, newError(ErrInvalidRequest, nil, "no build given")
	case json.RawMessage:
		raw = b
	case []byte:
		raw = b
	default:
		var err error
		// The encoding error names a type, never a value.
		if raw, err = json.Marshal(build); err != nil {
			return nil, newError(ErrInvalidRequest, err, "the build does not encode to JSON")
		}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		// No cause: a syntax error could quote part of the build.
		return nil, newError(ErrInvalidRequest, nil, "the build is not a JSON object")
	}
	out := map[string]json.RawMessage{}
	for _, key := range []string{"id", "version"} {
		if v, ok := top[key]; ok {
			out[key] = v
		}
	}
	// pipeline.Build's ID is `omitempty`; pullcheck reads a document with a
	// top-level "id" as a compiled build (without one, as pipeline source), so a
	// build always carries one here.
	if v, ok := out["id"]; !ok || string(v) == "null" {
		out["id"] = json.RawMessage(`""`)
	}
	for _, key := range []string{"services", "steps"} {
		if v, ok := top[key]; ok {
			out[key] = mapList(v, container)
		}
	}
	if v, ok := top["stages"]; ok {
		out["stages"] = mapList(v, stage)
	}
	if v, ok := top["secrets"]; ok {
		out["secrets"] = mapList(v, secret)
	}
	// Indented, so that the lines and columns of the report's origins mean
	// something in the JSON sent (one container per few lines).
	encoded, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, newError(ErrInvalidRequest, nil, "the build could not be encoded")
	}
	return encoded, nil
}

// mapList applies f to each object of a JSON list. A value that is not a list, and
// an item that is not an object, are kept only when they are scalars (so that
// pullcheck reports the malformed build), and replaced by null otherwise.
func mapList(v json.RawMessage, f func(map[string]json.RawMessage) map[string]json.RawMessage) json.RawMessage {
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		return scalarOrNull(v)
	}
	out := make([]json.RawMessage, 0, len(items))
	for _, item := range items {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(item, &obj); err != nil || obj == nil {
			out = append(out, scalarOrNull(item))
			continue
		}
		encoded, err := json.Marshal(f(obj))
		if err != nil {
			encoded = json.RawMessage("null")
		}
		out = append(out, encoded)
	}
	encoded, err := json.Marshal(out)
	if err != nil {
		return json.RawMessage("null")
	}
	return encoded
}

// scalarOrNull keeps numbers, booleans and null; strings, lists and objects (which
// could hold anything) become null.
func scalarOrNull(v json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(v)
	if len(t) == 0 || t[0] == '"' || t[0] == '[' || t[0] == '{' {
		return json.RawMessage("null")
	}
	return t
}

func stage(s map[string]json.RawMessage) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	if v, ok := s["name"]; ok {
		out["name"] = v
	}
	if v, ok := s["steps"]; ok {
		out["steps"] = mapList(v, container)
	}
	return out
}

func secret(s map[string]json.RawMessage) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, key := range []string{"name", "key", "engine", "type", "pull"} {
		if v, ok := s[key]; ok {
			out[key] = v
		}
	}
	if v, ok := s["origin"]; ok {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(v, &obj); err == nil && obj != nil {
			encoded, err := json.Marshal(container(obj))
			if err == nil {
				v = encoded
			} else {
				v = json.RawMessage("null")
			}
		} else {
			v = scalarOrNull(v)
		}
		out["origin"] = v
	}
	return out
}

// variable finds $NAME, ${NAME...} and ${#NAME} (the length form) in an image or
// pull value.
var variable = regexp.MustCompile(`\$\{?#?([A-Za-z_][A-Za-z0-9_]*)`)

func container(c map[string]json.RawMessage) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, key := range []string{"id", "number", "name", "image", "pull"} {
		if v, ok := c[key]; ok {
			out[key] = v
		}
	}
	if _, ok := c["parameters"]; ok {
		out["parameters"] = json.RawMessage("{}")
	}
	// The secrets injected into this container's environment (upstream injects
	// each under its target, upper-cased): never sent.
	injected := map[string]bool{}
	var refs []struct {
		Source string `json:"source"`
		Target string `json:"target"`
	}
	if v, ok := c["secrets"]; ok {
		if err := json.Unmarshal(v, &refs); err == nil && len(refs) > 0 {
			names := make([]map[string]string, 0, len(refs))
			for _, r := range refs {
				injected[strings.ToUpper(r.Target)] = true
				injected[strings.ToUpper(r.Source)] = true
				names = append(names, map[string]string{"source": r.Source, "target": r.Target})
			}
			if encoded, err := json.Marshal(names); err == nil {
				out["secrets"] = encoded
			}
		}
	}
	if v, ok := c["environment"]; ok {
		env := map[string]json.RawMessage{}
		var all map[string]json.RawMessage
		if err := json.Unmarshal(v, &all); err == nil {
			for _, name := range referenced(c) {
				if value, ok := all[name]; ok && !injected[strings.ToUpper(name)] {
					env[name] = value
				}
			}
		}
		encoded, err := json.Marshal(env)
		if err != nil {
			encoded = json.RawMessage("{}")
		}
		out["environment"] = encoded
	}
	return out
}

// referenced lists the variables the container's image and pull refer to.
func referenced(c map[string]json.RawMessage) []string {
	var names []string
	for _, key := range []string{"image", "pull"} {
		var text string
		if v, ok := c[key]; !ok || json.Unmarshal(v, &text) != nil {
			continue
		}
		for _, m := range variable.FindAllStringSubmatch(text, -1) {
			names = append(names, m[1])
		}
	}
	return names
}
