package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/hooks"
)

// TestAuditFileKilled: in every fsync mode, a server killed (SIGKILL) at a
// random moment while calls come from several writers at once has the
// audit line of every call it answered in the audit file, and no line of a
// call never made; the next server, killed in turn, appends to the same
// file after repairing a line the kill may have cut.
func TestAuditFileKilled(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 15))
	const rounds, writers = 4, 6
	for _, fsync := range []hooks.Fsync{hooks.FsyncAlways, hooks.FsyncInterval, hooks.FsyncNever} {
		t.Run(string(fsync), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.jsonl")
			config := filepath.Join(dir, "wink.yaml")
			yaml := fmt.Sprintf("hooks:\n  audit: {log: false, file: %q, fsync: %s}\n", path, fsync)
			if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			answered := map[string]bool{} // objectives of answered calls, every round
			sent := map[string]bool{}     // objectives of every call sent
			for round := range rounds {
				p := start(t, dir, "--config", config, "--store", "memory")
				p.initialize()
				m := newStdioMux(p)
				var mu sync.Mutex
				var wg sync.WaitGroup
				for w := range writers {
					wg.Go(func() {
						for i := 0; ; i++ {
							objective := fmt.Sprintf("round %d writer %d call %d", round, w, i)
							mu.Lock()
							sent[objective] = true
							mu.Unlock()
							r, err := m.try("planning_setup_plan", map[string]any{"objective": objective})
							if errors.Is(err, errNoAnswer) {
								return
							}
							if err != nil || r.IsError {
								t.Errorf("%s: %v %+v", objective, err, r)
								return
							}
							mu.Lock()
							answered[objective] = true
							mu.Unlock()
						}
					})
				}
				time.Sleep(time.Duration(20+rng.IntN(400)) * time.Millisecond)
				m.kill()
				wg.Wait()
				if t.Failed() {
					t.Fatalf("stderr of the killed process:\n%s", p.stderr)
				}
			}
			recs, err := hooks.ReadAuditFile(path)
			if err != nil {
				t.Fatal(err)
			}
			inFile := map[string]bool{}
			for _, r := range recs {
				var args struct{ Objective string }
				if err := json.Unmarshal(r.Args, &args); err != nil {
					t.Fatalf("record %s: %v", r.CallID, err)
				}
				if !sent[args.Objective] || inFile[args.Objective] {
					t.Errorf("record of %q: never sent, or recorded twice", args.Objective)
				}
				inFile[args.Objective] = true
			}
			lost := 0
			for o := range answered {
				if !inFile[o] {
					lost++
					if lost <= 5 {
						t.Errorf("answered, not in the audit file: %s", o)
					}
				}
			}
			t.Logf("%d calls answered, %d records, %d answered calls lost", len(answered), len(recs), lost)
			if lost > 0 || len(answered) < rounds {
				t.Fatalf("%d of %d answered calls are not in the audit file", lost, len(answered))
			}
		})
	}
}
