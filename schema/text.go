package schema

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// NotText reports the JSON pointer of the first string value of raw, a
// valid JSON document, that is not text: one whose bytes are not UTF-8, or that
// escapes half of a surrogate pair alone (\ud800). A decoder would replace
// either with U+FFFD without a word, and the value written would not be the
// one sent.
func NotText(raw []byte) (string, bool) {
	if utf8.Valid(raw) && !bytes.Contains(raw, []byte(`\u`)) {
		return "", false
	}
	return notText(raw, "")
}

func notText(raw []byte, ptr string) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		return ptr, !isText(raw[1 : len(raw)-1])
	case '[':
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return "", false
		}
		for i, item := range items {
			if p, ok := notText(item, ptr+"/"+strconv.Itoa(i)); ok {
				return p, true
			}
		}
	case '{':
		dec := json.NewDecoder(bytes.NewReader(raw))
		if _, err := dec.Token(); err != nil {
			return "", false
		}
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return "", false
			}
			name := "/" + escape(key.(string))
			var val json.RawMessage
			if dec.Decode(&val) != nil {
				return "", false
			}
			if p, ok := notText(val, ptr+name); ok {
				return p, true
			}
		}
	}
	return "", false
}

// isText reports whether the body of a JSON string literal, between its
// quotes, is UTF-8 with no escaped lone surrogate.
func isText(lit []byte) bool {
	if !utf8.Valid(lit) {
		return false
	}
	for i := 0; i < len(lit); i++ {
		if lit[i] != '\\' {
			continue
		}
		i++
		if i >= len(lit) || lit[i] != 'u' {
			continue
		}
		r, ok := hex4(lit[i+1:])
		if !ok {
			return false
		}
		i += 4
		switch {
		case r >= 0xdc00 && r <= 0xdfff:
			return false
		case r >= 0xd800 && r <= 0xdbff:
			if i+2 >= len(lit) || lit[i+1] != '\\' || lit[i+2] != 'u' {
				return false
			}
			lo, ok := hex4(lit[i+3:])
			if !ok || lo < 0xdc00 || lo > 0xdfff {
				return false
			}
			i += 6
		}
	}
	return true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(n), err == nil
}
