package sections

import (
	"slices"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// Progressive disclosure: a closed top-level section (Section.Closed) is
// summarised in the instructions and its tools are hidden until a session
// opens it with the open_section tool. Which sections a session has opened
// is a STATE slice of the session (opened): it is stored with the session,
// survives a restart, and rolls back with a call that fails. A section
// stays open for the rest of the session.
//
// The tree decides what is hidden (Hides); the server leaves hidden tools
// out of a session's tools/list and answers a call of one with
// ClosedMessage.

// SectionOpened opens the closed section Key for the session.
type SectionOpened struct {
	Key string
}

// opened holds the keys of the sections the session has opened, sorted.
var opened = session.NewKey[[]string]("sections.opened")

// Persist declares how the sections a session has opened are stored, as a
// sorted JSON array of their keys, and registers the reducer of
// SectionOpened. A server declares it whether or not a section is closed,
// so that a session stored while one was still loads after the
// configuration opens them all.
func Persist(r *session.Registry) {
	session.Persist(r, opened, session.JSON[[]string]())
	session.On(r, opened, func(old []string, _ bool, ev SectionOpened) ([]string, error) {
		i, found := slices.BinarySearch(old, ev.Key)
		if found {
			return old, nil
		}
		return slices.Insert(slices.Clip(old), i, ev.Key), nil
	})
}

// IsOpen reports whether the session s has opened the section key; a nil
// session has opened none.
func IsOpen(s *session.Session, key string) bool {
	if s == nil {
		return false
	}
	keys, _ := session.Get(s, opened)
	_, found := slices.BinarySearch(keys, key)
	return found
}

// Hides returns the closed section that hides tool from the session s (nil
// for a session that has opened nothing), or nil when s may see it: its
// section is not under a closed one, or s has opened it.
func (t *Tree) Hides(tool *tools.Tool, s *session.Session) *Section {
	sec := t.hider[tool]
	if sec == nil || IsOpen(s, sec.Key) {
		return nil
	}
	return sec
}

// Opener returns the open_section tool, or nil when no enabled section is
// closed.
func (t *Tree) Opener() *tools.Tool { return t.opener }

// ClosedMessage is what a call of tool, hidden by the closed section sec,
// answers.
func ClosedMessage(tool *tools.Tool, sec *Section) string {
	return "Tool '" + tool.Name() + "' is in section '" + sec.Key + "', which is closed: call " + OpenSection + ` {"section": "` + sec.Key + `"} first.`
}

// disclosureGuidance explains the closed sections to the model.
const disclosureGuidance = `Some of the sections below are closed: you see only their first paragraph, and their tools are not listed. To use one, call ` + "`" + OpenSection + "`" + ` with its key: from then on its tools are listed for this session (the server sends notifications/tools/list_changed), and the result holds the section's whole guidance. A section stays open for the rest of the session. Calling a tool of a closed section fails with a message naming the section to open.`

// disclosure returns the section of the open_section tool, which opens the
// closed sections of t, whose keys are closed.
func (t *Tree) disclosure(closed []string) *Section {
	t.opener = t.openSection(closed)
	return &Section{
		Key:       "disclosure",
		Title:     "Closed sections",
		Guidance:  disclosureGuidance,
		Tools:     []*tools.Tool{t.opener},
		Contained: true,
	}
}
