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
	readOnly := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(readOnly, 0o500); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name, dir, want string
		root            bool // the case holds for root too
	}{
		{"a file in the way", filepath.Join(file, "state"), "cannot be created", true},
		{"locked by another store", held, "is in use by process " + strconv.Itoa(os.Getpid()), true},
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

// TestEmbeddedServerStopped checks that a store whose server has stopped
// answers at once with ErrUnavailable.
func TestEmbeddedServerStopped(t *testing.T) {
	ctx := ctxT(t)
	s := must[*JetStream](t)(OpenEmbedded(ctx, t.TempDir(), Options{}))
	defer s.Close()
	rev := must[uint64](t)(s.Create(ctx, "s", nil))
	s.srv.Shutdown()
	s.srv.WaitForShutdown()

	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := s.Commit(cctx, "s", rev, []byte("h"), nil)
	wantErr(t, err, ErrUnavailable)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("commit on a stopped server took %v", d)
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
		if round == 0 {
			_, err := OpenEmbedded(ctx, dir, Options{})
			if want := "is in use by process " + strconv.Itoa(cmd.Process.Pid); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("open while the child has the store: %v, want %q", err, want)
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

		s := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
		c := loadCounter(t, s, "counter")
		s.Close()
		if c.N < acked || c.N > acked+1 {
			t.Fatalf("round %d: counter %d after the child acknowledged %d", round, c.N, acked)
		}
		acked = c.N
	}
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

// TestEmbeddedIncompatible checks that a store written in another format
// is refused, naming the directory, and left as it was.
func TestEmbeddedIncompatible(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	s := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
	must[uint64](t)(s.Create(ctx, "s", []byte("head")))
	cfg := s.state.CachedInfo().Config
	cfg.Metadata = map[string]string{formatKey: "1"}
	must[jetstream.Stream](t)(s.js.UpdateStream(ctx, cfg))
	s.Close()

	_, err := OpenEmbedded(ctx, dir, Options{})
	wantErr(t, err, ErrIncompatible)
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not name the directory", err)
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
	st := must[jetstream.Stream](t)(js.Stream(ctx, cfg.Name))
	if f := st.CachedInfo().Config.Metadata[formatKey]; f != "1" {
		t.Errorf("the refused store's format is now %q", f)
	}
	if m := must[*jetstream.RawStreamMsg](t)(st.GetLastMsgForSubject(ctx, "wink.head.s")); string(m.Data) != "head" {
		t.Errorf("head %q after a refused open", m.Data)
	}
}
