package schema

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Explain returns the error as the model reads it, with root naming the
// object at the root (a tool's name). Problems other than unknown fields
// come first, as Error writes them, after "Invalid arguments: ". Then each
// unknown field gets a sentence that names it (and the object it is in,
// below the root), and the field it most likely meant (Closest); and each
// object with unknown fields a sentence that lists the fields it takes, in
// the schema's order. A required field that is missing is not reported
// when an unknown field is taken for it. extra are fields the root takes
// that its schema does not list (an argument taken out before
// validation); they are listed after its own. For example:
//
//	Unknown argument 'replaceAll'; did you mean 'replace_all'? edit_file takes: file_path, old_string, new_string, replace_all.
func (e *Error) Explain(root string, extra ...string) string {
	var objects []*unknowns
	meant := map[string]bool{} // the pointers of the fields suggested
	for _, p := range e.Problems {
		if p.Message != UnknownField {
			continue
		}
		parent, name := split(p.Pointer)
		i := slices.IndexFunc(objects, func(u *unknowns) bool { return u.parent == parent })
		if i < 0 {
			u := &unknowns{parent: parent, known: p.Known}
			if parent == "" && u.known != nil {
				u.known = append(slices.Clip(u.known), extra...)
			}
			i, objects = len(objects), append(objects, u)
		}
		u := objects[i]
		c := Closest(name, u.known)
		u.names, u.meant = append(u.names, name), append(u.meant, c)
		if c != "" {
			meant[parent+"/"+escape(c)] = true
		}
	}
	var others []string
	for _, p := range e.Problems {
		if p.Message != UnknownField && !(p.Message == RequiredField && meant[p.Pointer]) {
			others = append(others, p.String())
		}
	}
	var b strings.Builder
	if len(others) > 0 {
		b.WriteString("Invalid arguments: " + strings.Join(others, "; "))
		if len(objects) > 0 {
			b.WriteByte('.')
		}
	}
	for _, u := range objects {
		u.explain(&b, root)
	}
	return b.String()
}

// unknowns are the unknown fields of one object: its pointer, the fields
// it takes (Problem.Known), the names of those it does not take and, for
// each, the field it most likely meant ("" for none).
type unknowns struct {
	parent string
	known  []string
	names  []string
	meant  []string
}

// explain writes to b a sentence for each unknown field, and one for what
// the object takes; root names the object at the root.
func (u *unknowns) explain(b *strings.Builder, root string) {
	what := root
	if u.parent != "" {
		what = u.parent[1:]
	}
	for i, name := range u.names {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("Unknown argument " + quote(name))
		if u.parent != "" {
			b.WriteString(" in " + what)
		}
		if c := u.meant[i]; c != "" {
			b.WriteString("; did you mean " + quote(c) + "?")
		} else {
			b.WriteByte('.')
		}
	}
	switch {
	case u.known == nil:
	case len(u.known) == 0:
		b.WriteString(" " + what + " takes no arguments.")
	default:
		b.WriteString(" " + what + " takes: " + strings.Join(u.known, ", ") + ".")
	}
}

// split returns the pointer of the object holding the field at ptr, and
// the field's name.
func split(ptr string) (parent, name string) {
	i := strings.LastIndexByte(ptr, '/')
	return ptr[:max(i, 0)], unescape(ptr[i+1:])
}

// unescape decodes one JSON pointer segment (escape encodes it).
func unescape(seg string) string {
	return strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
}

// quote writes a field's name in single quotes, as the messages do; a name
// with a quote or a character that does not print is written in Go syntax.
func quote(name string) string {
	if strings.ContainsFunc(name, func(r rune) bool { return r == '\'' || !unicode.IsPrint(r) }) {
		return strconv.Quote(name)
	}
	return "'" + name + "'"
}

// Closest returns the field among known that name most likely meant, or ""
// when none is close enough to suggest. Names are compared without case,
// '_' and '-' (so replaceAll means replace_all): a field equal to name in
// that form wins; otherwise the first of those at the smallest edit
// distance (distance), if that distance is at most a third of name's
// length (none below three characters).
func Closest(name string, known []string) string {
	n := fold(name)
	for _, k := range known {
		if slices.Equal(fold(k), n) {
			return k
		}
	}
	best, bestDist := "", len(n)/3+1
	for _, k := range known {
		if d := distance(n, fold(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// fold returns name in lower case, without '_' and '-', as runes.
func fold(name string) []rune {
	out := make([]rune, 0, len(name))
	for _, r := range name {
		if r != '_' && r != '-' {
			out = append(out, unicode.ToLower(r))
		}
	}
	return out
}

// distance returns the edit distance of a and b: the fewest insertions,
// deletions and substitutions of one rune, and transpositions of two
// adjacent runes, that turn a into b (the optimal string alignment
// distance: Levenshtein's, with a swap of two letters as one typo).
func distance(a, b []rune) int {
	rows := [3][]int{make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)}
	for j := range rows[1] {
		rows[1][j] = j
	}
	for i := 1; i <= len(a); i++ {
		before, prev, cur := rows[0], rows[1], rows[2]
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], before[j-2]+1)
			}
		}
		rows = [3][]int{prev, cur, before}
	}
	return rows[1][len(b)]
}

// declared returns the names of the properties of the object schema whose
// additionalProperties keyword is at loc (the library's absolute keyword
// location, "mem:///schema.json#/properties/a/additionalProperties"), in
// the order the schema document lists them; nil when it cannot be found.
func (v *Validator) declared(loc string) []string {
	_, frag, ok := strings.Cut(loc, "#")
	if !ok {
		return nil
	}
	frag = pointer(frag)
	frag = frag[:max(strings.LastIndexByte(frag, '/'), 0)]
	node := json.RawMessage(v.doc)
	for seg := range strings.SplitSeq(frag, "/") {
		if seg == "" {
			continue
		}
		if node = member(node, unescape(seg)); node == nil {
			return nil
		}
	}
	var object map[string]json.RawMessage
	if json.Unmarshal(node, &object) != nil {
		return nil
	}
	names := []string{}
	props, ok := object["properties"]
	if !ok {
		return names
	}
	dec := json.NewDecoder(bytes.NewReader(props))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return nil
		}
		names = append(names, key.(string))
	}
	return names
}

// member returns the member key of the JSON object node, or the element
// of the array node at index key; nil when there is none.
func member(node json.RawMessage, key string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(node, &obj) == nil {
		return obj[key]
	}
	var arr []json.RawMessage
	if json.Unmarshal(node, &arr) == nil {
		if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < len(arr) {
			return arr[i]
		}
	}
	return nil
}
