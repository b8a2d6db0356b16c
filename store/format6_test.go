package store

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// asFormat5 configures the state stream of s as format 5 had it (one
// message per subject, no rollups, no data subject) and marks every
// stream with marker: "5" for a store that format 5 wrote, "6" for one
// whose migration ended before its opening configured the state stream.
func asFormat5(t *testing.T, ctx context.Context, s *JetStream, marker string) {
	t.Helper()
	for _, st := range []jetstream.Stream{s.state, s.log, s.tasks} {
		cfg := st.CachedInfo().Config
		cfg.Metadata = map[string]string{formatKey: marker}
		if st == s.state {
			cfg.Subjects = []string{s.name + ".head.*", s.name + ".blob.*.*"}
			cfg.MaxMsgsPerSubject = 1
			cfg.AllowRollup = false
		}
		got := must[jetstream.Stream](t)(s.js.UpdateStream(ctx, cfg)).CachedInfo().Config
		if got.AllowRollup || got.MaxMsgsPerSubject != cfg.MaxMsgsPerSubject || len(got.Subjects) != len(cfg.Subjects) {
			t.Fatalf("stream %s configured as %+v", cfg.Name, got)
		}
	}
	s.rollup = false
}

// wantFormat6 checks that the streams of s are marked 6 and the state
// stream is configured as format 6 wants it.
func wantFormat6(t *testing.T, ctx context.Context, s *JetStream) {
	t.Helper()
	for _, st := range []jetstream.Stream{s.state, s.log, s.tasks} {
		info := must[*jetstream.StreamInfo](t)(st.Info(ctx))
		if f := info.Config.Metadata[formatKey]; f != "6" {
			t.Errorf("stream %s marked %q, want 6", info.Config.Name, f)
		}
		if st != s.state {
			continue
		}
		if !info.Config.AllowRollup || info.Config.MaxMsgsPerSubject != dataPerSubject || !slices.Contains(info.Config.Subjects, s.dataSubject("*")) {
			t.Errorf("the state stream's configuration: rollup %v, %d messages per subject, subjects %v", info.Config.AllowRollup, info.Config.MaxMsgsPerSubject, info.Config.Subjects)
		}
	}
}

// usable checks that a store opened on what was stored in an earlier
// format still holds the head and blob stored then, and takes commits,
// located blobs and their reads; a head replaced keeps its subject to one
// message.
func usable(t *testing.T, ctx context.Context, s *JetStream, head string, blob []byte) {
	t.Helper()
	h := must[Head](t)(s.Load(ctx, "s"))
	if string(h.Data) != head {
		t.Fatalf("head %q, want %q", h.Data, head)
	}
	wantBlobs(t, s, "s", true, Hash(blob))
	names := putData(t, s, "s", "located")
	rev := must[uint64](t)(s.Commit(ctx, "s", h.Rev, []byte("h6 "+names[0]), nil))
	must[uint64](t)(s.Commit(ctx, "s", rev, []byte("h6 "+names[0]), nil))
	wantBlobs(t, s, "s", true, names...)
	info := must[*jetstream.StreamInfo](t)(s.state.Info(ctx, jetstream.WithSubjectFilter(s.headSubject("s"))))
	if n := info.State.Subjects[s.headSubject("s")]; n != 1 {
		t.Errorf("%d messages on the head's subject, want 1", n)
	}
}

// TestEmbeddedFormat5: a store of format 5, its state stream configured
// as format 5 had it, is refused without a step from 5, migrated with
// one, and then configured as format 6 wants it, holding what it held and
// taking located blobs; opened again without steps it is as it was. A
// store marked 6 whose state stream is still configured as format 5 (a
// process that ended between the migration's last marker and the
// stream's configuration) is configured by the next opening.
func TestEmbeddedFormat5(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	s := must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
	rev := must[uint64](t)(s.Create(ctx, "s", []byte("h5")))
	five, blobs := blob("five")
	must[uint64](t)(s.Commit(ctx, "s", rev, []byte("h5"), blobs))
	asFormat5(t, ctx, s, "5")
	s.Close()

	_, err := OpenEmbedded(ctx, dir, Options{})
	wantErr(t, err, ErrIncompatible)
	if !strings.Contains(err.Error(), "no migration from format 5") {
		t.Errorf("error %q does not name format 5", err)
	}

	s = must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{Migrations: []Step{{From: 5}}}))
	wantFormat6(t, ctx, s)
	usable(t, ctx, s, "h5", five)
	head := string(must[Head](t)(s.Load(ctx, "s")).Data)
	s.Close()

	s = must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
	wantFormat6(t, ctx, s)
	located := strings.TrimPrefix(head, "h6 ")
	wantBlobs(t, s, "s", true, located)
	asFormat5(t, ctx, s, "6")
	s.Close()

	s = must[*JetStream](t)(OpenEmbedded(ctx, dir, Options{}))
	defer s.Close()
	wantFormat6(t, ctx, s)
	wantBlobs(t, s, "s", true, located)
	usable(t, ctx, s, head, five)
}

// TestClusterFormat5: on a cluster, a state stream of format 5 is
// configured in place as format 6 wants it by the opening that migrates
// it, and is usable after; a step's commits during the migration, on the
// stream still configured as format 5, keep one message per subject.
func TestClusterFormat5(t *testing.T) {
	c := sharedCluster(t)
	ctx := ctxT(t)
	opts := Options{Replicas: 3, Name: storeName("format5-"), Timeout: 30 * time.Second}
	s := must[*JetStream](t)(Connect(ctx, c.URLs(), opts))
	defer s.Close()
	rev := must[uint64](t)(s.Create(ctx, "s", []byte("h5")))
	five, blobs := blob("five")
	must[uint64](t)(s.Commit(ctx, "s", rev, []byte("h5"), blobs))
	asFormat5(t, ctx, s, strconv.Itoa(5))

	opts.Migrations = []Step{{From: 5, Migrate: func(ctx context.Context, m *Migration) error {
		h, err := m.Store.Load(ctx, "s")
		if err == nil {
			_, err = m.Store.Commit(ctx, "s", h.Rev, []byte("migrated"), blobs)
		}
		return err
	}}}
	m := must[*JetStream](t)(Connect(ctx, c.URLs(), opts))
	defer m.Close()
	wantFormat6(t, ctx, m)
	usable(t, ctx, m, "migrated", five)
	subject := m.blobSubject("s", Hash(five))
	info := must[*jetstream.StreamInfo](t)(m.state.Info(ctx, jetstream.WithSubjectFilter(subject)))
	if n := info.State.Subjects[subject]; n != 1 {
		t.Errorf("%d copies of a blob written again, want 1", n)
	}
}
