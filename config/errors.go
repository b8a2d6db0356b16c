package config

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// KeyError is a problem with one key of a configuration file. Parse and Load
// return it for problems found while reading the file, and other packages
// use it for checks the schema cannot express, such as a policy naming an
// unknown tool (see Config.Errorf).
type KeyError struct {
	File string // the file name given to Parse or Load
	Key  string // the dotted key path, such as "policies.sequential_dependency.deploy[1]"; "" for the whole file
	Line int    // the 1-based line of the key, or 0 when unknown
	Msg  string // what is wrong, in plain English
}

// Error returns the error as "file:line: key: message", leaving out the
// parts that are empty or zero.
func (e *KeyError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		if b.Len() > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strconv.Itoa(e.Line))
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is a list of problems found in one configuration file, sorted by
// line. Parse returns it when it finds more than one problem.
type Errors []*KeyError

// Error returns the errors one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the errors, so that errors.As can find a *KeyError in Errors.
func (es Errors) Unwrap() []error {
	errs := make([]error, len(es))
	for i, e := range es {
		errs[i] = e
	}
	return errs
}

// joinErrors sorts errs by line (unknown lines last), drops duplicates and
// returns the single error or an Errors; it returns nil for no errors.
func joinErrors(errs []*KeyError) error {
	if len(errs) == 0 {
		return nil
	}
	slices.SortStableFunc(errs, func(a, b *KeyError) int {
		if (a.Line == 0) != (b.Line == 0) {
			if a.Line == 0 {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(a.Line, b.Line), strings.Compare(a.Key, b.Key), strings.Compare(a.Msg, b.Msg))
	})
	errs = slices.CompactFunc(errs, func(a, b *KeyError) bool { return *a == *b })
	if len(errs) == 1 {
		return errs[0]
	}
	return Errors(errs)
}
