package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/merkle"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// known is the read-before-write memory of a session: the policy's STATE
// slice, read through a key of the same name and type.
var known = session.NewKey[merkle.Map[string]]("policy.read_before_write")

func knownFiles(s *session.Session) string {
	m, ok := session.Get(s, known)
	if !ok {
		return ""
	}
	var out []string
	for k, v := range m.All() {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// interrupt is how the probe tool and editHook end a call on purpose.
type interrupt struct {
	mode   string // "", "result", "error", "panic", "deadline", "cancel"
	at     int    // apply_edits: the operation before which to fail
	cancel context.CancelFunc
}

var current atomic.Pointer[interrupt]

// fail ends a handler the way the current interrupt says; ok is false when
// it returns (a failed result or a Go error) rather than panics.
func fail(ctx *tools.Context, mode string) error {
	switch mode {
	case "error":
		return errors.New("injected error")
	case "panic":
		panic("injected panic")
	case "deadline":
		<-ctx.Done()
		return ctx.Err()
	case "cancel":
		current.Load().cancel()
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

type mutateOp struct {
	Op      string `json:"op" jsonschema:"write or rm."`
	Path    string `json:"path" jsonschema:"The path."`
	Content string `json:"content,omitempty" jsonschema:"What to write."`
}

type mutateParams struct {
	Ops  []mutateOp `json:"ops" jsonschema:"What to change, in order."`
	Fail string     `json:"fail,omitempty" jsonschema:"How to fail after the changes: result, error, panic, deadline, cancel, or not at all."`
}

// probeSection has a tool that changes the workspace through its Go API,
// then fails the way it is told: every row of the failure table.
func probeSection() *sections.Section {
	return &sections.Section{
		Key: "probe", Title: "Probe", Guidance: "Fails on purpose.",
		Tools: []*tools.Tool{tools.New("probe_mutate", "Change files, then fail as told.", tools.Annotations{Title: "Mutate"},
			func(ctx *tools.Context, p mutateParams) (tools.Result[any], error) {
				w := From(ctx.Session)
				for _, op := range p.Ops {
					if op.Op == "rm" {
						_, _ = w.Remove(op.Path)
					} else {
						_ = w.WriteFile(op.Path, []byte(op.Content))
					}
				}
				if p.Fail == "result" {
					return tools.Fail[any]("Injected failure."), nil
				}
				if err := fail(ctx, p.Fail); err != nil {
					return tools.Result[any]{}, err
				}
				return tools.OK[any]("Mutated.", nil), nil
			})},
	}
}

func init() {
	editHook = func(ctx *tools.Context, i int) error {
		in := current.Load()
		if in == nil || in.mode == "" || i != in.at {
			return nil
		}
		return fail(ctx, in.mode)
	}
}

// pair runs the same calls against a memory and a disk workspace.
type pair struct {
	t  *testing.T
	hs []*harness
}

var (
	paths    = []string{"a", "b", "c/d", "c/e", "c/f/g", "h/i", "a/x", "c"}
	contents = []string{"", "x", "xy", "y\nz", "xx yy", "z\nz\n"}
	olds     = []string{"x", "y", "z", "xy", "q"}
)

func (p *pair) randomCall(r *rand.Rand) (tool, args string, in *interrupt, mustFail bool) {
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	op := func() string {
		switch r.IntN(4) {
		case 0:
			return fmt.Sprintf(`{"op":"write","file_path":%s,"content":%s,"overwrite":%v}`, q(pick(paths)), q(pick(contents)), r.IntN(2) == 0)
		case 1:
			return fmt.Sprintf(`{"op":"edit","file_path":%s,"old_string":%s,"new_string":%s,"replace_all":%v}`, q(pick(paths)), q(pick(olds)), q(pick(contents)), r.IntN(2) == 0)
		case 2:
			return fmt.Sprintf(`{"op":"move","source":%s,"destination":%s,"overwrite":%v}`, q(pick(paths)), q(pick(paths)), r.IntN(2) == 0)
		}
		return fmt.Sprintf(`{"op":"rm","path":%s}`, q(pick(paths)))
	}
	in = &interrupt{}
	switch r.IntN(14) {
	case 10:
		return "move_file", fmt.Sprintf(`{"source":%s,"destination":%s,"overwrite":%v}`, q(pick(paths)), q(pick(paths)), r.IntN(2) == 0), in, false
	case 11:
		return "create_directory", fmt.Sprintf(`{"path":%s}`, q(pick(paths))), in, false
	case 12:
		return "directory_tree", fmt.Sprintf(`{"path":%s,"depth":%d}`, q(pick([]string{"", "c", "h"})), 1+r.IntN(3)), in, false
	case 13:
		return "read_multiple_files", fmt.Sprintf(`{"paths":[%s,%s]}`, q(pick(paths)), q(pick(paths))), in, false
	case 0, 1:
		return "read_file", fmt.Sprintf(`{"file_path":%s}`, q(pick(paths))), in, false
	case 2:
		return "write_file", fmt.Sprintf(`{"file_path":%s,"content":%s,"overwrite":%v}`, q(pick(paths)), q(pick(contents)), r.IntN(2) == 0), in, false
	case 3:
		return "edit_file", fmt.Sprintf(`{"file_path":%s,"old_string":%s,"new_string":%s}`, q(pick(paths)), q(pick(olds)), q(pick(contents))), in, false
	case 4:
		return "rm", fmt.Sprintf(`{"path":%s}`, q(pick(paths))), in, false
	case 5:
		tools := []string{`{"pattern":"**"}`, `{"pattern":"x|z","path":"c"}`}
		if r.IntN(2) == 0 {
			return "glob", tools[0], in, false
		}
		return "grep", tools[1], in, false
	case 6, 7:
		n := 1 + r.IntN(5)
		ops := make([]string, n)
		for i := range ops {
			ops[i] = op()
		}
		if r.IntN(3) == 0 {
			// An operation that cannot succeed, last.
			ops = append(ops, `{"op":"edit","file_path":"c/d","old_string":"no such text","new_string":"x"}`)
			mustFail = true
		} else if r.IntN(3) == 0 {
			in.mode, in.at = pick([]string{"error", "panic", "cancel", "deadline"}), r.IntN(n)
			mustFail = true
		}
		return "apply_edits", `{"edits":[` + strings.Join(ops, ",") + `]}`, in, mustFail
	}
	n := 1 + r.IntN(5)
	ops := make([]string, n)
	for i := range ops {
		if r.IntN(4) == 0 {
			ops[i] = fmt.Sprintf(`{"op":"rm","path":%s}`, q(pick(paths)))
		} else {
			ops[i] = fmt.Sprintf(`{"op":"write","path":%s,"content":%s}`, q(pick(paths)), q(pick(contents)))
		}
	}
	mode := pick([]string{"", "result", "error", "panic", "cancel", "deadline"})
	return "probe_mutate", fmt.Sprintf(`{"ops":[%s],"fail":%q}`, strings.Join(ops, ","), mode), in, mode != ""
}

// canonical lists a workspace's directories and files with their contents,
// the same way for both backends.
func canonical(dump string) string {
	var out []string
	for line := range strings.SplitSeq(dump, "\n") {
		if name, _, ok := strings.Cut(line, "/ "); ok && !strings.Contains(name, " ") {
			line = name + "/"
		} else if name, rest, ok := strings.Cut(line, " -rw"); ok {
			_, content, _ := strings.Cut(rest, " ")
			line = name + " " + content
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// TestRollbackProperty runs thousands of random calls, many of them failing
// on purpose (a failing apply_edits operation, a policy denial, a failure
// result, a Go error, a panic, an expired deadline, a cancellation), on a
// memory and a disk workspace side by side. After every failed call the
// tree is byte-for-byte what it was before it (on disk: contents, modes,
// no temporary files left) and so is the read-before-write memory; after
// every call both backends answered the same and hold the same files.
func TestRollbackProperty(t *testing.T) {
	calls := 2500
	if testing.Short() {
		calls = 300
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("WINK_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (set WINK_SEED to repeat)", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	p := &pair{t: t}
	for _, bk := range backends {
		p.hs = append(p.hs, newHarness(t, bk, map[string]string{"a": "x", "c/d": "xy", "h/i": "z\nz\n"},
			harnessOpts{extra: []*sections.Section{probeSection()}}))
	}
	defer current.Store(nil)
	failed := 0
	for i := range calls {
		tool, args, in, mustFail := p.randomCall(r)
		var texts []string
		var errs []bool
		for _, h := range p.hs {
			before, rbw := h.dump(h.cs), knownFiles(h.session(h.cs))
			ctx, cancel := context.WithCancel(context.Background())
			current.Store(&interrupt{mode: in.mode, at: in.at, cancel: cancel})
			var meta map[string]any
			if in.mode == "deadline" || strings.Contains(args, `"fail":"deadline"`) {
				meta = map[string]any{"io.wink-mcp/timeoutMs": 20}
			}
			r := h.cs.Call(ctx, tool, json.RawMessage(args), meta)
			text, isErr := r.Said(), r.IsError
			cancel()
			if mustFail && !isErr {
				t.Fatalf("call %d %s %s on %s: succeeded, want a failure: %s", i, tool, args, h.b.Kind(), text)
			}
			if isErr {
				failed++
				if after := h.dump(h.cs); after != before {
					t.Fatalf("call %d %s %s failed on %s (%s) but changed the tree:\nbefore:\n%s\nafter:\n%s", i, tool, args, h.b.Kind(), text, before, after)
				}
				if after := knownFiles(h.session(h.cs)); after != rbw {
					t.Fatalf("call %d %s %s failed on %s (%s) but changed the read-before-write memory:\nbefore %s\nafter  %s", i, tool, args, h.b.Kind(), text, rbw, after)
				}
			}
			texts, errs = append(texts, text), append(errs, isErr)
		}
		deadline := in.mode == "deadline" || strings.Contains(args, `"fail":"deadline"`)
		if errs[0] != errs[1] || texts[0] != texts[1] && !deadline {
			t.Fatalf("call %d %s %s: the backends disagree:\nmemory (isError=%v): %s\ndisk (isError=%v): %s", i, tool, args, errs[0], texts[0], errs[1], texts[1])
		}
		if m, d := canonical(p.hs[0].dump(p.hs[0].cs)), canonical(p.hs[1].dump(p.hs[1].cs)); m != d {
			t.Fatalf("call %d %s %s: the backends hold different files:\nmemory:\n%s\ndisk:\n%s", i, tool, args, m, d)
		}
	}
	t.Logf("%d calls, %d failed calls checked", calls, failed/2)
}
