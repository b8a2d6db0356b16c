package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/mcpc"
)

// server is one server under measurement with its sessions open: a process
// started for the measurement or, over HTTP, a server given by its URL.
type server struct {
	proc    *mcpc.Process // nil for a server given by URL
	clients []mcpc.Client
	// cold is the time from starting the process to the answer to the
	// first initialize.
	cold time.Duration
}

// open starts the server of s and opens sessions on it: one over stdio,
// sessions over HTTP. The caller must close the server, also on error.
func open(ctx context.Context, transport string, s *side, sessions int) (*server, error) {
	srv := &server{}
	if transport == "stdio" {
		p, c, err := mcpc.StartStdio(ctx, s.argv)
		srv.proc = p
		if err != nil {
			return srv, err
		}
		srv.clients = []mcpc.Client{c}
		err = mcpc.Initialize(ctx, c)
		srv.cold = p.Since()
		return srv, p.Explain(err)
	}

	url := s.url
	if url == "" {
		addr, err := mcpc.FreeAddr()
		if err != nil {
			return srv, err
		}
		url = "http://" + addr + "/mcp"
		if srv.proc, err = mcpc.Start(ctx, append(s.argv, "--http", addr)); err != nil {
			return srv, err
		}
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	for i := range sessions {
		c := &mcpc.HTTP{Client: hc, URL: url}
		err := mcpc.Initialize(ctx, c)
		// The first session waits for a started server to listen.
		for i == 0 && srv.proc != nil && errors.Is(err, syscall.ECONNREFUSED) {
			select {
			case <-srv.proc.Exited():
				return srv, srv.explain(errors.New("the server exited"))
			case <-time.After(time.Millisecond):
			}
			err = mcpc.Initialize(ctx, c)
		}
		if err != nil {
			return srv, srv.explain(err)
		}
		srv.clients = append(srv.clients, c)
		if i == 0 && srv.proc != nil {
			srv.cold = srv.proc.Since()
		}
	}
	return srv, nil
}

// explain adds to err what the process, if any, wrote last on its stderr.
func (srv *server) explain(err error) error {
	if srv.proc == nil {
		return err
	}
	return srv.proc.Explain(err)
}

// close ends the sessions and the process: it asks the process to exit,
// as a client does, so that what a server does on its way out (writing
// its --cpu-profile) is done, and kills it if it does not exit in time.
func (srv *server) close() {
	for _, c := range srv.clients {
		c.Close()
	}
	if srv.proc != nil {
		if err := srv.proc.Stop(stopTimeout); err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
		}
	}
}

// stopTimeout bounds how long a server may take to exit once asked.
const stopTimeout = 10 * time.Second

// cpuTime returns the CPU time the process has used so far; 0 if unknown.
func (srv *server) cpuTime() time.Duration {
	if srv.proc == nil {
		return 0
	}
	return mcpc.CPUTimeOf(srv.proc.Pid())
}

// peakRSS returns the peak resident memory of the process in KiB; 0 if
// unknown.
func (srv *server) peakRSS() int64 {
	if srv.proc == nil {
		return 0
	}
	return srv.proc.PeakRSS()
}
