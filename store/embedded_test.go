package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestEmbeddedReopen(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	s := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
	rev := must[uint64](t)(s.Create(ctx, "s", nil))
	content, blobs := blob("content")
	rev = must[uint64](t)(s.Commit(ctx, "s", rev, []byte("head"), blobs))
	if err := s.AppendLog(ctx, "s", []byte("call")); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Reopened, with sync-always this time: everything is there.
	s = must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{SyncAlways: true}))
	defer s.Close()
	h := must[Head](t)(s.Load(ctx, "s"))
	if string(h.Data) != "head" || h.Rev != rev {
		t.Fatalf("after reopen: head %q at %d, want head at %d", h.Data, h.Rev, rev)
	}
	if got := must[[]byte](t)(s.Blob(ctx, "s", Hash(content))); !bytes.Equal(got, content) {
		t.Fatalf("after reopen: blob %q", got)
	}
	if l := must[[][]byte](t)(s.ReadLog(ctx, "s", 10)); len(l) != 1 || string(l[0]) != "call" {
		t.Fatalf("after reopen: log %q", l)
	}
	must[uint64](t)(s.Commit(ctx, "s", rev, []byte("next"), nil))
}

func TestEmbeddedStateDir(t *testing.T) {
	ctx := ctxT(t)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	held := t.TempDir()
	s := must[*JetStream](t)(OpenEmbedded(ctx, held, Options{}))
	defer s.Close()
	emptyCredential := t.TempDir()
	if err := os.WriteFile(filepath.Join(emptyCredential, "credential"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(readOnly, 0o500); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name, dir, want string
		root            bool // the case holds for root too
	}{
		{"a file in the way", filepath.Join(file, "state"), "cannot be created", true},
		{"an empty credential", emptyCredential, "is empty", true},
		{"not writable", readOnly, "is not writable", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.root && os.Geteuid() == 0 {
				t.Skip("root writes anywhere")
			}
			_, err := OpenEmbedded(ctx, tt.dir, Options{})
			if err == nil || !strings.Contains(err.Error(), tt.dir) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one naming %s that says %q", err, tt.dir, tt.want)
			}
		})
	}

	// The lock goes with the store.
	s.Close()
	must[*JetStream](t)(OpenEmbedded(ctx, held, Options{})).Close()
}

// TestEmbeddedLocksUnsupported checks that a state dir on a filesystem
// without file locks is a startup error that names the dir and says why.
func TestEmbeddedLocksUnsupported(t *testing.T) {
	defer func(f func(*os.File) (bool, error)) { lockFile = f }(lockFile)
	lockFile = func(*os.File) (bool, error) {
		return false, fmt.Errorf("%w: %w", errLocksUnsupported, syscall.ENOLCK)
	}
	dir := t.TempDir()
	_, err := OpenEmbedded(ctxT(t), dir, Options{})
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "file locks do not work there") {
		t.Fatalf("error %v, want one naming %s that says file locks do not work there", err, dir)
	}
}

// TestEmbeddedServerStopped checks that a process whose server stopped
// by itself starts it again, under the lock it still holds: a commit made
// meanwhile lands.
func TestEmbeddedServerStopped(t *testing.T) {
	ctx := ctxT(t)
	s := must[*JetStream](t)(OpenEmbedded(ctx, t.TempDir(), Options{}))
	defer s.Close()
	rev := must[uint64](t)(s.Create(ctx, "s", nil))
	srv := s.host.srv.Load()
	srv.Shutdown()
	srv.WaitForShutdown()

	rev = must[uint64](t)(s.Commit(ctx, "s", rev, []byte("h"), nil))
	if h := must[Head](t)(s.Load(ctx, "s")); h.Rev != rev || string(h.Data) != "h" {
		t.Fatalf("after the restart: head %q at %d, want h at %d", h.Data, h.Rev, rev)
	}
	if s.host.srv.Load() == srv {
		t.Fatal("the server was not started again")
	}
}

// TestEmbeddedKill9 kills a child process that commits increments to the
// embedded store, several times, and checks after each kill that every
// acknowledged increment is in the store, and that the process could not
// have committed more than one unacknowledged.
func TestEmbeddedKill9(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	acked := 0
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envCommitter+"="+dir)
		cmd.Stderr = os.Stderr
		out := must[io.ReadCloser](t)(cmd.StdoutPipe())
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewReader(out)
		for n := 0; n < 30+40*round; n++ {
			line, err := lines.ReadString('\n')
			if err != nil {
				t.Fatalf("round %d: child ended: %v", round, err)
			}
			acked = must[int](t)(strconv.Atoi(strings.TrimSpace(line)))
		}
		// In the first round, a store opened while the child holds the
		// dir reaches the child's server, and takes it over once the
		// child is killed; in the others, the dir is opened afresh.
		var sibling *JetStream
		if round == 0 {
			sibling = must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
			if sibling.host.srv.Load() != nil {
				t.Fatal("a second store on the dir started a server of its own")
			}
			if c := loadCounter(t, sibling, "counter"); c.N < acked {
				t.Fatalf("through the child's server: counter %d after the child acknowledged %d", c.N, acked)
			}
		}
		cmd.Process.Kill()
		for { // values the child printed before it died were acknowledged too
			line, err := lines.ReadString('\n')
			if err != nil {
				break
			}
			acked = must[int](t)(strconv.Atoi(strings.TrimSpace(line)))
		}
		cmd.Wait()

		s := sibling
		if s == nil {
			s = must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
		}
		start := time.Now()
		c := loadCounter(t, s, "counter")
		if sibling != nil {
			if s.host.srv.Load() == nil {
				t.Fatal("the other store did not take the server over")
			}
			t.Logf("taken over and read %v after the kill", time.Since(start))
		}
		s.Close()
		if c.N < acked || c.N > acked+1 {
			t.Fatalf("round %d: counter %d after the child acknowledged %d", round, c.N, acked)
		}
		acked = c.N
	}
}

// TestEmbeddedShared opens three stores on one state dir, as three
// processes would: each reads what the others commit, a stale commit is
// refused whichever process makes it, and when the holder of the dir
// closes, and then the next, the one left serves on with everything.
func TestEmbeddedShared(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	var stores [3]*JetStream
	for i := range stores {
		stores[i] = must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
		defer stores[i].Close()
	}
	a, b, c := stores[0], stores[1], stores[2]
	if a.host.srv.Load() == nil || b.host.srv.Load() != nil || c.host.srv.Load() != nil {
		t.Fatal("want the first store to hold the dir's server, and no other")
	}
	for i, s := range stores {
		if !s.Shared() {
			t.Errorf("store %d does not say it is shared", i)
		}
		select {
		case <-s.Sharing():
		case <-time.After(5 * time.Second):
			t.Errorf("store %d: Sharing not closed", i)
		}
	}

	rev := must[uint64](t)(b.Create(ctx, "s", []byte("from b")))
	if h := must[Head](t)(c.Load(ctx, "s")); string(h.Data) != "from b" || h.Rev != rev {
		t.Fatalf("c reads %q at %d", h.Data, h.Rev)
	}
	content, blobs := blob("a's blob")
	rev = must[uint64](t)(a.Commit(ctx, "s", rev, []byte("from a"), blobs))
	_, err := c.Commit(ctx, "s", rev-1, []byte("stale"), nil)
	wantErr(t, err, ErrConflict)
	if got := must[[]byte](t)(b.Blob(ctx, "s", Hash(content))); !bytes.Equal(got, content) {
		t.Fatalf("b reads blob %q", got)
	}

	// The holder goes; one of the others takes its place.
	a.Close()
	rev = must[uint64](t)(c.Commit(ctx, "s", rev, []byte("from c"), nil))
	if b.host.srv.Load() == nil && c.host.srv.Load() == nil {
		t.Fatal("no store took the server over")
	}
	if h := must[Head](t)(b.Load(ctx, "s")); string(h.Data) != "from c" || h.Rev != rev {
		t.Fatalf("b reads %q at %d after the takeover", h.Data, h.Rev)
	}
	// And then the new holder goes too.
	holder, left := b, c
	if c.host.srv.Load() != nil {
		holder, left = c, b
	}
	holder.Close()
	rev = must[uint64](t)(left.Commit(ctx, "s", rev, []byte("last"), nil))
	if h := must[Head](t)(left.Load(ctx, "s")); string(h.Data) != "last" || h.Rev != rev {
		t.Fatalf("the last store reads %q at %d", h.Data, h.Rev)
	}
	if got := must[[]byte](t)(left.Blob(ctx, "s", Hash(content))); !bytes.Equal(got, content) {
		t.Fatalf("the last store reads blob %q", got)
	}
}

// TestEmbeddedAlone checks that a store alone on its dir does not say it
// is shared, and says so once another opens the dir: its Sharing channel
// closes when the other connects (it says hello), before anything asks.
func TestEmbeddedAlone(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	a := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
	defer a.Close()
	if a.Shared() {
		t.Fatal("a store alone on its dir says it is shared")
	}
	select {
	case <-a.Sharing():
		t.Fatal("the Sharing channel of a store alone on its dir is closed")
	default:
	}
	b := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
	defer b.Close()
	select {
	case <-a.Sharing():
	case <-ctx.Done():
		t.Fatal("the holder's Sharing channel is not closed once another store is open")
	}
	if !a.Shared() {
		t.Fatal("the holder does not say it is shared once another store is open")
	}
	b.Close()
	if !a.Shared() {
		t.Fatal("the holder forgot it was shared when the other store closed")
	}
}

// TestEmbeddedCredential checks the dir's files (the dir 0700, the
// credential 0600) and that the server refuses a connection without the
// credential, or with another.
func TestEmbeddedCredential(t *testing.T) {
	ctx := ctxT(t)
	dir := filepath.Join(t.TempDir(), "state")
	s := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
	defer s.Close()
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "credential"): 0o600, filepath.Join(dir, "lock"): 0o600} {
		if fi := must[os.FileInfo](t)(os.Stat(path)); fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}
	addr := must[string](t)(s.host.holder())
	for name, opts := range map[string][]nats.Option{
		"no credential":     nil,
		"another":           {nats.Token("not-the-token")},
		"user and password": {nats.UserInfo("wink-mcp", s.host.token)},
	} {
		if nc, err := nats.Connect("nats://"+addr, opts...); err == nil {
			nc.Close()
			t.Errorf("%s: connected", name)
		} else if !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("%s: %v, want an authorization violation", name, err)
		}
	}
	nc := must[*nats.Conn](t)(nats.Connect("nats://"+addr, nats.Token(s.host.token)))
	nc.Close()
}

func TestServerLog(t *testing.T) {
	var buf bytes.Buffer
	l := serverLog{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))}
	l.Noticef("banner %d", 1)
	l.Debugf("debug")
	l.Tracef("trace")
	l.Warnf("disk %s", "slow")
	l.Errorf("write failed: %v", errors.New("EIO"))
	l.Fatalf("cannot start")
	want := `level=WARN msg="disk slow" component=nats-server
level=ERROR msg="write failed: EIO" component=nats-server
level=ERROR msg="cannot start" component=nats-server
`
	if buf.String() != want {
		t.Fatalf("logged\n%s\nwant\n%s", buf.String(), want)
	}
}

// TestConnectionErrorsLogged checks that what goes wrong on a store's
// connection between requests (here a subscriber that falls behind) is
// logged, not written to stderr by nats.go.
func TestConnectionErrorsLogged(t *testing.T) {
	ctx := ctxT(t)
	logged := make(chan string, 16)
	logger := slog.New(handlerFunc(func(r slog.Record) {
		if r.Level < slog.LevelWarn {
			return
		}
		select {
		case logged <- r.Message:
		default:
		}
	}))
	s := must[*JetStream](t)(OpenEmbedded(ctx, t.TempDir(), Options{Logger: logger}))
	defer s.Close()
	release := make(chan struct{})
	sub := must[*nats.Subscription](t)(s.nc.Subscribe("slow", func(*nats.Msg) { <-release }))
	defer close(release)
	if err := sub.SetPendingLimits(1, -1); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := s.nc.Publish("slow", nil); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case msg := <-logged:
		if msg != "session store connection" {
			t.Fatalf("logged %q", msg)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a subscriber that fell behind was not logged")
	}
}

// handlerFunc is a slog.Handler that passes each record to a function.
type handlerFunc func(slog.Record)

func (h handlerFunc) Enabled(context.Context, slog.Level) bool      { return true }
func (h handlerFunc) Handle(_ context.Context, r slog.Record) error { h(r); return nil }
func (h handlerFunc) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h handlerFunc) WithGroup(string) slog.Handler                 { return h }

// TestEmbeddedQuiet checks that opening, using and closing the embedded
// store writes nothing to stdout or stderr.
func TestEmbeddedQuiet(t *testing.T) {
	ctx := ctxT(t)
	stdout, stderr := os.Stdout, os.Stderr
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout, os.Stderr = w, w
	got := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); got <- b }()
	func() {
		defer func() { os.Stdout, os.Stderr = stdout, stderr }()
		s := must[*JetStream](t)(OpenEmbedded(ctx, t.TempDir(), Options{}))
		must[uint64](t)(s.Create(ctx, "s", nil))
		s.Close()
	}()
	w.Close()
	if b := <-got; len(b) > 0 {
		t.Fatalf("the embedded store wrote %q", b)
	}
}

// TestEmbeddedRefused checks that a write the server refuses for good
// fails soon with the server's answer, not at the deadline as if the store
// were down.
func TestEmbeddedRefused(t *testing.T) {
	ctx := ctxT(t)
	s := must[*JetStream](t)(OpenEmbedded(ctx, t.TempDir(), Options{}))
	defer s.Close()
	rev := must[uint64](t)(s.Create(ctx, "s", nil))
	cfg := s.state.CachedInfo().Config
	cfg.Sealed = true
	must[jetstream.Stream](t)(s.js.UpdateStream(ctx, cfg))

	_, blobs := blob("content")
	for _, tt := range []struct {
		name  string
		blobs map[string][]byte
	}{{"head", nil}, {"blob", blobs}} {
		start := time.Now()
		_, err := s.Commit(ctx, "s", rev, []byte("h"), tt.blobs)
		var api *jetstream.APIError
		if !errors.As(err, &api) || errors.Is(err, ErrUnavailable) {
			t.Errorf("%s refused: %v, want the server's answer", tt.name, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s refused after %v", tt.name, d)
		}
	}
}

// TestInterruptedDelete leaves a deletion as a crash right after its marker
// would, and checks that Expire finishes it, and so does Create under the
// same name.
func TestInterruptedDelete(t *testing.T) {
	ctx := ctxT(t)
	s := must[*JetStream](t)(OpenEmbedded(ctx, t.TempDir(), Options{}))
	defer s.Close()
	content, blobs := blob("content")
	interrupt := func(session string) {
		rev := must[uint64](t)(s.Create(ctx, session, nil))
		rev = must[uint64](t)(s.Commit(ctx, session, rev, []byte("h"), blobs))
		must[uint64](t)(s.putHead(ctx, session, rev, nil, nats.Header{opHeader: []string{opDelete}}))
		_, err := s.Load(ctx, session)
		wantErr(t, err, ErrNotFound)
		must[[]byte](t)(s.Blob(ctx, session, Hash(content))) // left behind
	}

	interrupt("expired")
	if n := must[int](t)(s.Expire(ctx, time.Time{})); n != 0 {
		t.Fatalf("Expire deleted %d sessions, want it to finish one deletion only", n)
	}
	_, err := s.Blob(ctx, "expired", Hash(content))
	wantErr(t, err, ErrNotFound)

	interrupt("created")
	must[uint64](t)(s.Create(ctx, "created", nil))
	_, err = s.Blob(ctx, "created", Hash(content))
	wantErr(t, err, ErrNotFound)
}

// TestDeletionMarkers checks that a deleted session leaves a marker that
// Expire removes once it is a minute old (or older than Expire's cutoff),
// that the state stream allows no per-message TTL, and that a stream made
// by an earlier version, which allows them, opens as it is.
func TestDeletionMarkers(t *testing.T) {
	for _, allowedTTL := range []bool{false, true} {
		t.Run(fmt.Sprintf("allowed TTL %v", allowedTTL), func(t *testing.T) {
			ctx := ctxT(t)
			dir := t.TempDir()
			s := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
			if allowedTTL {
				cfg := s.state.CachedInfo().Config
				cfg.AllowMsgTTL = true
				must[jetstream.Stream](t)(s.js.UpdateStream(ctx, cfg))
				s.Close()
				s = must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
			}
			defer s.Close()
			info := must[*jetstream.StreamInfo](t)(s.state.Info(ctx))
			if info.Config.AllowMsgTTL != allowedTTL {
				t.Fatalf("state stream allows TTLs: %v, want %v", info.Config.AllowMsgTTL, allowedTTL)
			}
			heads := func() int {
				info := must[*jetstream.StreamInfo](t)(s.state.Info(ctx, jetstream.WithSubjectFilter(s.headSubject("*"))))
				return len(info.State.Subjects)
			}
			must[uint64](t)(s.Create(ctx, "gone", nil))
			if err := s.Delete(ctx, "gone"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
			must[uint64](t)(s.Create(ctx, "kept", nil))
			if n := must[int](t)(s.Expire(ctx, time.Time{})); n != 0 || heads() != 2 {
				t.Fatalf("Expire of nothing deleted %d sessions and left %d heads, want 0 and the marker beside the head", n, heads())
			}
			if n := must[int](t)(s.Expire(ctx, time.Now().Add(-time.Hour))); n != 0 || heads() != 2 {
				t.Fatalf("Expire deleted %d sessions and left %d heads, want 0 and a marker not yet a minute old", n, heads())
			}
			// Made later than the marker: it goes, and the session stays.
			cutoff := must[Head](t)(s.Load(ctx, "kept")).Time.Add(-time.Nanosecond)
			if n := must[int](t)(s.Expire(ctx, cutoff)); n != 0 || heads() != 1 {
				t.Fatalf("Expire deleted %d sessions and left %d heads, want 0 and one", n, heads())
			}
			must[Head](t)(s.Load(ctx, "kept"))
			must[uint64](t)(s.Create(ctx, "gone", nil))
		})
	}
}

// TestEmbeddedSweepCost checks what a sweep leaves and costs the server:
// the blobs kept, the others gone, no consumer left on the stream, and no
// request per blob removed.
func TestEmbeddedSweepCost(t *testing.T) {
	ctx := ctxT(t)
	s := must[*JetStream](t)(OpenEmbedded(ctx, t.TempDir(), Options{}))
	defer s.Close()
	rev := must[uint64](t)(s.Create(ctx, "s", nil))
	var kept []string
	for i := range 50 {
		content, blobs := blob(fmt.Sprint("content ", i))
		rev = must[uint64](t)(s.Commit(ctx, "s", rev, []byte("h"), blobs))
		if i%10 == 0 {
			kept = append(kept, Hash(content))
		}
	}
	var requests atomic.Int64
	sub := must[*nats.Subscription](t)(s.nc.Subscribe("$JS.API.STREAM.>", func(*nats.Msg) { requests.Add(1) }))
	defer sub.Unsubscribe()
	sw := must[Swept](t)(s.Sweep(ctx, "s", rev, func(h string) bool { return slices.Contains(kept, h) }))
	if sw.Removed != 45 || sw.Kept != len(kept) {
		t.Errorf("the sweep removed %d blobs and kept %d, want 45 and %d", sw.Removed, sw.Kept, len(kept))
	}
	if err := s.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// One purge, and the deletion of the scan's consumer.
	if r := requests.Load(); r > 3 {
		t.Errorf("the sweep of 50 blobs made %d stream requests", r)
	}
	for _, h := range kept {
		must[[]byte](t)(s.Blob(ctx, "s", h))
	}
	info := must[*jetstream.StreamInfo](t)(s.state.Info(ctx))
	if info.State.Consumers != 0 {
		t.Errorf("%d consumers left on the state stream after a sweep", info.State.Consumers)
	}
	if info.State.Msgs != uint64(1+len(kept)) {
		t.Errorf("the state stream holds %d messages, want the head and %d blobs", info.State.Msgs, len(kept))
	}
}

// setFormat marks the streams of s as holding format f ("": no marker,
// as format 1 left them).
func setFormat(t *testing.T, ctx context.Context, s *JetStream, f string) {
	t.Helper()
	for _, st := range []jetstream.Stream{s.state, s.log, s.tasks} {
		cfg := st.CachedInfo().Config
		cfg.Metadata = map[string]string{}
		if f != "" {
			cfg.Metadata[formatKey] = f
		}
		must[jetstream.Stream](t)(s.js.UpdateStream(ctx, cfg))
	}
}

// TestEmbeddedIncompatible: a store in a newer format, or in an older one
// without a step to migrate it, is refused, naming the directory and both
// formats, and left as it was, for the version that wrote it.
func TestEmbeddedIncompatible(t *testing.T) {
	for _, tc := range []struct {
		name, format string
		want         []string
	}{
		{"newer", strconv.Itoa(Format + 1), []string{fmt.Sprintf("holds format %d", Format+1), fmt.Sprintf("reads formats 1 to %d", Format)}},
		{"older without a step", "", []string{"holds format 1", fmt.Sprintf("writes format %d", Format), "no migration from format 1"}},
		{"not a number", "x", []string{`"x"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			dir := t.TempDir()
			s := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
			must[uint64](t)(s.Create(ctx, "s", []byte("head")))
			setFormat(t, ctx, s, tc.format)
			name := s.state.CachedInfo().Config.Name
			s.Close()

			called := false
			_, err := OpenEmbedded(ctx, dir, Options{Migrations: []Step{{From: Format + 1, Migrate: func(context.Context, *Migration) error {
				called = true
				return nil
			}}}})
			wantErr(t, err, ErrIncompatible)
			for _, w := range append(tc.want, dir) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if called {
				t.Error("a step ran")
			}
			// Still there, as it was, for the version that wrote it.
			srv := must[*server.Server](t)(server.NewServer(&server.Options{DontListen: true, JetStream: true, StoreDir: dir, NoSigs: true}))
			srv.Start()
			defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
			if !srv.ReadyForConnections(5 * time.Second) {
				t.Fatal("server not ready")
			}
			nc := must[*nats.Conn](t)(nats.Connect("", nats.InProcessServer(srv)))
			defer nc.Close()
			js := must[jetstream.JetStream](t)(jetstream.New(nc))
			st := must[jetstream.Stream](t)(js.Stream(ctx, name))
			if f := st.CachedInfo().Config.Metadata[formatKey]; f != tc.format {
				t.Errorf("the refused store's format is now %q", f)
			}
			if m := must[*jetstream.RawStreamMsg](t)(st.GetLastMsgForSubject(ctx, "wink.head.s")); string(m.Data) != "head" {
				t.Errorf("head %q after a refused open", m.Data)
			}
		})
	}
}

// TestEmbeddedMigrates: a store of format 1 is migrated as it is opened:
// the step runs on the store, the call log's messages of one entry each
// are framed anew, nothing lost, and the streams are marked with Format;
// opened again, nothing runs. A step that fails leaves the store in
// format 1, and the next opening runs it again.
func TestEmbeddedMigrates(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	s := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
	must[uint64](t)(s.Create(ctx, "a", []byte("head1")))
	var want []string
	for i := range 5 {
		// As format 1 appended them: one entry a message.
		e := fmt.Sprintf(`{"call_id":"%d"}`, i)
		must[*jetstream.PubAck](t)(s.js.Publish(ctx, s.logSubject("a"), []byte(e)))
		want = append(want, e)
	}
	setFormat(t, ctx, s, "")
	s.Close()

	runs := 0
	fail := errors.New("step failed")
	step := func(err error) []Step {
		return []Step{{From: 1, Migrate: func(ctx context.Context, m *Migration) error {
			runs++
			if err != nil {
				return err
			}
			h, err := m.Store.Load(ctx, "a")
			if err != nil {
				return err
			}
			_, err = m.Store.Commit(ctx, "a", h.Rev, []byte("head2"), nil)
			m.Point()
			return err
		}}}
	}
	_, err := OpenEmbedded(ctx, dir, Options{Migrations: throughFormat(step(fail)...)})
	if !errors.Is(err, fail) || runs != 1 {
		t.Fatalf("a failing step: %v after %d runs", err, runs)
	}
	s = must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{Migrations: throughFormat(step(nil)...)}))
	if runs != 2 {
		t.Errorf("the step ran %d times, want 2", runs)
	}
	if h := must[Head](t)(s.Load(ctx, "a")); string(h.Data) != "head2" {
		t.Errorf("head %q", h.Data)
	}
	got := must[[][]byte](t)(s.ReadLog(ctx, "a", 100))
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("the log after the migration: %q, want %q", got, want)
	}
	for _, st := range []jetstream.Stream{s.state, s.log, s.tasks} {
		if f := st.CachedInfo().Config.Metadata[formatKey]; f != strconv.Itoa(Format) {
			t.Errorf("stream %s marked %q", st.CachedInfo().Config.Name, f)
		}
	}
	must[struct{}](t)(struct{}{}, s.AppendLog(ctx, "a", []byte(`{"call_id":"5"}`), []byte(`{"call_id":"6"}`)))
	s.Close()

	s = must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{Migrations: throughFormat(step(nil)...)}))
	defer s.Close()
	if runs != 2 {
		t.Errorf("the step ran again on a migrated store")
	}
	if got := must[[][]byte](t)(s.ReadLog(ctx, "a", 100)); len(got) != 7 {
		t.Errorf("the log: %q", got)
	}
}

// TestMigrateLogResumes: the call log's migration, cut short after the
// entries were copied and before the old messages were purged, or after a
// version before markers appended framed messages, copies nothing twice
// and loses nothing when run again.
func TestMigrateLogResumes(t *testing.T) {
	ctx := ctxT(t)
	s := must[*JetStream](t)(OpenEmbedded(ctx, t.TempDir(), Options{}))
	defer s.Close()
	subject := s.logSubject("a")
	pub := func(data string, hdr nats.Header) {
		must[*jetstream.PubAck](t)(s.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: []byte(data), Header: hdr}))
	}
	pub(`{"n":1}`, nil)
	pub(`{"n":2}`, nil)
	// A copy of the first two, as a migration cut short left it.
	copied := logFrames([][]byte{[]byte(`{"n":1}`), []byte(`{"n":2}`)})[0]
	pub(string(copied), nats.Header{migratedHeader: []string{"2"}})
	// Framed, by a version that writes format 2, on a store that lost its
	// marker.
	pub(string(logFrames([][]byte{[]byte(`{"n":3}`)})[0]), nil)
	pub(`{"n":4}`, nil)
	for range 2 {
		must[struct{}](t)(struct{}{}, s.migrateLog1(ctx, func() {}))
		got := must[[][]byte](t)(s.ReadLog(ctx, "a", 100))
		// What is framed stays where it is; an entry of format 1 after
		// it is copied to the end.
		if want := `["{\"n\":1}" "{\"n\":2}" "{\"n\":3}" "{\"n\":4}"]`; fmt.Sprintf("%q", got) != want {
			t.Errorf("the log: %q, want %s", got, want)
		}
	}
}

// TestEmbeddedMigrationWaits: while the holder of a state dir migrates
// it, another process opening the dir does not migrate: it waits, and is
// refused with ErrMigrating if its deadline comes first, or opens the
// store once the migration is done.
func TestEmbeddedMigrationWaits(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	s := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
	must[uint64](t)(s.Create(ctx, "a", []byte("head")))
	setFormat(t, ctx, s, "")
	s.Close()

	started, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	step := []Step{{From: 1, Migrate: func(context.Context, *Migration) error {
		if runs.Add(1) == 1 {
			close(started)
			<-release
		}
		return nil
	}}}
	type opened struct {
		s   *JetStream
		err error
	}
	open := func(ctx context.Context) chan opened {
		ch := make(chan opened, 1)
		go func() {
			s, err := OpenEmbedded(ctx, dir, Options{Migrations: throughFormat(step...)})
			ch <- opened{s, err}
		}()
		return ch
	}
	holder := open(ctx)
	<-started
	// Long enough to reach the store and find it migrating, on a busy
	// machine too; the holder migrates until released.
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if o := <-open(short); !errors.Is(o.err, ErrMigrating) {
		t.Errorf("opened during the migration: %v, want ErrMigrating", o.err)
	}
	waiting := open(ctx)
	close(release)
	for _, ch := range []chan opened{holder, waiting} {
		o := <-ch
		if o.err != nil {
			t.Fatal(o.err)
		}
		defer o.s.Close()
		if h := must[Head](t)(o.s.Load(ctx, "a")); string(h.Data) != "head" {
			t.Errorf("head %q", h.Data)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the step ran %d times, want once, in the holder", n)
	}
}

// throughFormat returns steps, which end with a step from an early
// format, followed by steps that change nothing up to Format, for the
// tests of a migration that are not about a particular format.
func throughFormat(steps ...Step) []Step {
	for from := steps[len(steps)-1].From + 1; from < Format; from++ {
		steps = append(steps, Step{From: from})
	}
	return steps
}
