package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/wink-mcp/wink-mcp/config"
)

// TestStoreSettingsRefused: a store setting that cannot work stops the
// server at startup with an error that says which and why, before anything
// is served.
func TestStoreSettingsRefused(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pem")
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("store: memory\nnats: {creds: /etc/nats.creds}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"--store", "redis://x"}, `"redis://x" is not a session store`},
		{[]string{"--store", "memory", "--nats-creds", "/etc/nats.creds"}, "the NATS settings need an external store"},
		{[]string{"--config", cfg}, "config.yaml:2: nats: the NATS settings need an external store"},
		{[]string{"--store-sync", "sometimes"}, `"sometimes" is not a sync setting (want one of interval, always)`},
		{[]string{"--store", "memory", "--store-sync", "always"}, "store_sync: applies to the embedded store only"},
		{[]string{"--store", "nats://127.0.0.1:1", "--store-sync", "always"}, "store_sync: applies to the embedded store only"},
		{[]string{"--store", "nats://127.0.0.1:1", "--nats-cert", missing}, "needs both cert and key"},
		{[]string{"--store", "nats://127.0.0.1:1", "--nats-ca", missing}, "missing.pem: no such file"},
		{[]string{"--store", "nats://127.0.0.1:1", "--nats-creds", missing}, "missing.pem: no such file"},
		{[]string{"--store", "nats://127.0.0.1:1", "--nats-replicas", "9"}, "replicas must be 1 to 5, got 9"},
	} {
		var stdout, stderr strings.Builder
		code := run(t.Context(), c.args, strings.NewReader(""), &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), c.stderr) || stdout.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q, want 1 and %q", c.args, code, stderr.String(), c.stderr)
		}
	}
}

// TestStoreOverTLS: --store tls://… with --nats-ca reaches a NATS server
// that serves TLS only, and works; without the authority the connection is
// refused at startup.
func TestStoreOverTLS(t *testing.T) {
	dir := t.TempDir()
	cert, ca := selfSigned(t, dir)
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: filepath.Join(dir, "js"), NoSigs: true,
		TLS: true, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, TLSTimeout: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	url := fmt.Sprintf("tls://%s", srv.Addr())
	logger := slog.New(slog.DiscardHandler)

	cfg := config.Default()
	cfg.Store, cfg.NATS.CA = url, ca
	st, err := openStore(cfg, "", logger)
	if err != nil {
		t.Fatalf("openStore with the authority: %v", err)
	}
	defer st.Close()
	if _, err := st.Create(t.Context(), "s1", []byte(`{}`)); err != nil {
		t.Fatalf("Create over TLS: %v", err)
	}
	if h, err := st.Load(t.Context(), "s1"); err != nil || string(h.Data) != `{}` {
		t.Fatalf("Load over TLS: %q, %v", h.Data, err)
	}

	cfg = config.Default()
	cfg.Store = url
	if st, err := openStore(cfg, "", logger); err == nil {
		st.Close()
		t.Fatal("openStore without the authority succeeded")
	} else if !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the authority: %v, want a certificate error", err)
	}
}

// TestStoreSyncAlways: --store-sync always opens the embedded store, which
// then takes commits.
func TestStoreSyncAlways(t *testing.T) {
	cfg := config.Default()
	cfg.StateDir, cfg.StoreSync = t.TempDir(), "always"
	st, err := openStore(cfg, "desk", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rev, err := st.Create(t.Context(), "desk", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Commit(t.Context(), "desk", rev, []byte(`{"a":1}`), nil); err != nil {
		t.Fatal(err)
	}
}

// TestSessionTTLDefault: a stdio process keeps an idle session for 30 days
// unless told otherwise; an HTTP server for 30 minutes.
func TestSessionTTLDefault(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgFile, []byte("http: {session_ttl: 2h}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 30 * 24 * time.Hour},
		{[]string{"--session-ttl", "1h"}, time.Hour},
		{[]string{"--config", cfgFile}, 2 * time.Hour},
		{[]string{"--http", "127.0.0.1:0"}, 30 * time.Minute},
	} {
		f, err := parseFlags(append([]string{"--store", "memory"}, c.args...), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		a, err := build(f, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		a.close()
		cfg := a.cfg
		if cfg.HTTP.SessionTTL != c.want {
			t.Errorf("%q: session TTL %v, want %v", c.args, cfg.HTTP.SessionTTL, c.want)
		}
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 into dir and
// returns it and the path of its PEM, which is its own authority.
func selfSigned(t *testing.T, dir string) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "wink-test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, path
}
