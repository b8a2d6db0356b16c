package config

import (
	"fmt"
	"path"
	"time"

	"github.com/wink-mcp/wink-mcp/hooks"
)

// formats are the checks of the strings whose schema names a format, for
// what the schema cannot say; hooks.Formats adds those of the hooks'
// settings. Each returns what is wrong with a value, or "".
var formats = map[string]func(string) string{
	"go-duration":          func(s string) string { return checkDuration(s, false) },
	"positive-go-duration": func(s string) string { return checkDuration(s, true) },
	"glob": func(s string) string {
		if _, err := path.Match(s, ""); err != nil {
			return fmt.Sprintf("invalid glob pattern %q", s)
		}
		return ""
	},
}

// checkDuration checks a Go duration that must not be negative, nor zero
// when positive.
func checkDuration(s string, positive bool) string {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return fmt.Sprintf(`invalid duration %q (use a Go duration such as "30s" or "1m30s")`, s)
	case positive && d <= 0:
		return fmt.Sprintf("must be greater than 0, got %q", s)
	case d < 0:
		return fmt.Sprintf("must not be negative, got %q", s)
	}
	return ""
}

// formatCheck returns the check of a format, or nil when there is none.
func formatCheck(name string) func(string) string {
	if f, ok := formats[name]; ok {
		return f
	}
	return hooks.Formats[name]
}

// checkFormats checks the strings of the tree whose schema names a format.
// It looks only at strings, so that it can run when the schema found
// problems too.
func (t *tree) checkFormats(doc any) []*KeyError {
	var errs []*KeyError
	mapFormats(doc, t.root, nil, func(format string, v any, path []any) any {
		s, ok := v.(string)
		if check := formatCheck(format); ok && check != nil {
			if why := check(s); why != "" {
				errs = append(errs, t.keyError(path, "%s", why))
			}
		}
		return v
	})
	return errs
}

// mapFormats walks v, the value at path in the file, along its schema s, and
// returns a copy of it in which each value whose schema names a format is
// what f returns for it.
func mapFormats(s, v any, path []any, f func(format string, v any, path []any) any) any {
	m, _ := s.(map[string]any)
	if format, ok := m["format"].(string); ok {
		return f(format, v, path)
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := m["properties"].(map[string]any)
		out := make(map[string]any, len(v))
		for k, x := range v {
			ps, ok := props[k]
			if !ok {
				ps = m["additionalProperties"]
			}
			out[k] = mapFormats(ps, x, append(path[:len(path):len(path)], k), f)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = mapFormats(m["items"], x, append(path[:len(path):len(path)], i), f)
		}
		return out
	}
	return v
}

// checkRoot checks that workspace.root is set exactly when the backend is
// disk, a rule between two keys that the schema leaves to Go.
func (t *tree) checkRoot() []*KeyError {
	w, ok := get(t.root, "workspace").(map[string]any)
	if !ok {
		return nil
	}
	_, root := w["root"]
	switch disk := w["backend"] == "disk"; {
	case disk && !root:
		return []*KeyError{t.keyError([]any{"workspace"}, `missing required key "root" (required when backend is disk)`)}
	case !disk && root:
		return []*KeyError{t.keyError([]any{"workspace", "root"}, "not allowed unless backend is disk")}
	}
	return nil
}
