package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// A tree is a YAML document as plain values: map[string]any, []any, string,
// int64, float64, bool and nil, the types the schema validator accepts.
// It also records the line of every key and list item.
type tree struct {
	file  string
	root  any            // nil for an empty document
	lines map[string]int // key path (see formatPath) -> line
	errs  []*KeyError
}

// parseTree decodes one YAML document into a tree. Problems with the YAML
// itself are returned as an error, with every problem found.
func parseTree(file string, data []byte) (*tree, error) {
	t := &tree{file: file, lines: map[string]int{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return t, nil // empty, or only comments
		}
		return nil, t.yamlError(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, t.yamlError(err)
	default:
		return nil, &KeyError{File: file, Line: next.Line, Msg: "a configuration file must hold a single YAML document"}
	}
	if len(doc.Content) == 0 {
		return t, nil
	}
	root := doc.Content[0]
	t.lines[""] = root.Line
	t.root = t.convert(root, nil)
	if err := joinErrors(t.errs); err != nil {
		return nil, err
	}
	return t, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError turns an error of the YAML parser into a KeyError.
func (t *tree) yamlError(err error) error {
	msg := err.Error()
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	return &KeyError{File: t.file, Line: line, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// errorf records a problem at path.
func (t *tree) errorf(path []any, line int, format string, args ...any) {
	t.errs = append(t.errs, &KeyError{File: t.file, Key: formatPath(path), Line: line, Msg: fmt.Sprintf(format, args...)})
}

// keyError returns a KeyError at path with the path's line.
func (t *tree) keyError(path []any, format string, args ...any) *KeyError {
	k := formatPath(path)
	return &KeyError{File: t.file, Key: k, Line: t.lines[k], Msg: fmt.Sprintf(format, args...)}
}

// convert turns the node at path into a plain value, recording problems.
func (t *tree) convert(n *yaml.Node, path []any) any {
	if n.Kind == yaml.AliasNode {
		t.errorf(path, n.Line, "YAML aliases (*%s) are not supported", n.Value)
		return nil
	}
	if n.Anchor != "" {
		t.errorf(path, n.Line, "YAML anchors (&%s) are not supported", n.Anchor)
	}
	tag := n.ShortTag()
	switch n.Kind {
	case yaml.MappingNode:
		if tag != "!!map" {
			t.errorf(path, n.Line, "unsupported YAML tag %q", n.Tag)
			return nil
		}
		return t.mapping(n, path)
	case yaml.SequenceNode:
		if tag != "!!seq" {
			t.errorf(path, n.Line, "unsupported YAML tag %q", n.Tag)
			return nil
		}
		list := make([]any, len(n.Content))
		for i, item := range n.Content {
			p := append(path[:len(path):len(path)], i)
			t.lines[formatPath(p)] = item.Line
			list[i] = t.convert(item, p)
		}
		return list
	case yaml.ScalarNode:
		return t.scalar(n, path)
	}
	t.errorf(path, n.Line, "unsupported YAML node")
	return nil
}

// mapping converts a mapping node; keys must be unique, non-empty strings.
func (t *tree) mapping(n *yaml.Node, path []any) map[string]any {
	m := make(map[string]any, len(n.Content)/2)
	first := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge":
			t.errorf(path, k.Line, "YAML merge keys (<<) are not supported")
			continue
		case k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str":
			t.errorf(path, k.Line, "key %s is %s; keys must be strings", describeKey(k), kindName(k))
			continue
		case k.Value == "":
			// The schema validator cannot point at an empty key.
			t.errorf(path, k.Line, "empty key")
			continue
		case k.Anchor != "":
			t.errorf(path, k.Line, "YAML anchors (&%s) are not supported", k.Anchor)
		}
		p := append(path[:len(path):len(path)], k.Value)
		if line, dup := first[k.Value]; dup {
			t.errorf(p, k.Line, "duplicate key (first defined on line %d)", line)
			continue
		}
		first[k.Value] = k.Line
		t.lines[formatPath(p)] = k.Line
		m[k.Value] = t.convert(v, p)
	}
	return m
}

// scalar converts a scalar node according to its resolved tag.
func (t *tree) scalar(n *yaml.Node, path []any) any {
	switch tag := n.ShortTag(); tag {
	case "!!str", "!!timestamp": // a date is a string to us
		return n.Value
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			t.errorf(path, n.Line, "invalid boolean %q", n.Value)
		}
		return b
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			t.errorf(path, n.Line, "integer %s is out of range", n.Value)
		}
		return i
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			t.errorf(path, n.Line, "number %s is not a finite number", n.Value)
			return nil
		}
		return f
	default:
		t.errorf(path, n.Line, "unsupported YAML tag %q", n.Tag)
		return nil
	}
}

// describeKey returns a short rendering of a key node for error messages.
func describeKey(k *yaml.Node) string {
	if k.Kind == yaml.ScalarNode {
		return strconv.Quote(k.Value)
	}
	return "at column " + strconv.Itoa(k.Column)
}

// kindName returns the type of a node in the words error messages use.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.ShortTag() {
	case "!!int":
		return "an integer"
	case "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!null":
		return "null"
	case "!!timestamp":
		return "a timestamp"
	}
	return "of type " + n.ShortTag()
}

// typeName returns the type of a plain value in the words error messages use.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case int64:
		return "integer"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "list"
	case map[string]any:
		return "mapping"
	}
	return fmt.Sprintf("%T", v)
}

// formatPath renders a path of map keys (string) and list indexes (int) as
// a dotted key such as "policies.sequential_dependency.deploy[1]". A key that
// is empty or holds dots, brackets, quotes, spaces or control characters is
// written quoted in brackets, as in `policies.sequential_dependency["a.b"]`.
func formatPath(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch p := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		case string:
			if plainKey(p) {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(p)
			} else {
				b.WriteString("[" + strconv.Quote(p) + "]")
			}
		}
	}
	return b.String()
}

func plainKey(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return strings.ContainsRune(`.[]"`, r) || unicode.IsSpace(r) || !unicode.IsPrint(r)
	})
}

// get returns the value at path, or nil when there is none.
func get(v any, path ...any) any {
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[p]
		case int:
			l, ok := v.([]any)
			if !ok || p < 0 || p >= len(l) {
				return nil
			}
			v = l[p]
		}
	}
	return v
}

// pointer resolves a JSON pointer such as "/workspace/mounts/0" against v,
// returning the value and the path to it in the form formatPath takes.
func pointer(v any, ptr string) (any, []any) {
	var path []any
	for _, tok := range splitPointer(ptr) {
		switch c := v.(type) {
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, append(path, tok)
			}
			path, v = append(path, i), c[i]
		case map[string]any:
			path, v = append(path, tok), c[tok]
		default:
			return nil, append(path, tok)
		}
	}
	return v, path
}
