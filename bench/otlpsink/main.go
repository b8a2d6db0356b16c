// Command otlpsink is an OpenTelemetry collector that keeps nothing: it
// answers every OTLP/HTTP export (POST /v1/traces, /v1/metrics, /v1/logs)
// with success and discards it, so that a load run can measure what
// exporting costs the server, not what a collector does with it.
//
// Usage:
//
//	otlpsink [--addr 127.0.0.1:4318]
//
// It prints the number of exports and bytes received when it is
// interrupted.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4318", "listen `address`")
	flag.Parse()
	var exports, bytes atomic.Int64
	http.HandleFunc("POST /v1/", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		exports.Add(1)
		bytes.Add(n)
		// An empty protobuf message is the export's response: success.
		w.Header().Set("Content-Type", "application/x-protobuf")
	})
	go func() {
		c := make(chan os.Signal, 1)
		signal.Notify(c, os.Interrupt, syscall.SIGTERM)
		<-c
		fmt.Printf("otlpsink: %d exports, %d bytes\n", exports.Load(), bytes.Load())
		os.Exit(0)
	}()
	log.Fatal(http.ListenAndServe(*addr, nil))
}
