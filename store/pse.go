//go:build linux

package store

import (
	_ "unsafe" // for go:linkname

	_ "github.com/nats-io/nats-server/v2/server/pse"
)

// The embedded server's package pse samples the CPU time of the process
// every second, from its init for as long as the process lives, whether a
// server runs or not, for the server's monitoring (the CPU of varz and
// statsz), which no store serves: each sample wakes an idle process. The
// chain of samples ends at the first one that cannot read its file, so the
// store points it at a name no file has (pse_norace.go): pse reports no
// CPU or memory from then on.
//
// pseProcStatFile is pse's file (/proc/PID/stat); pseSampled is what it
// was before the store changed it, which a test checks, so that a pse
// without that variable (the linkname then declares a variable of its
// own) fails loudly.
//
//go:linkname pseProcStatFile github.com/nats-io/nats-server/v2/server/pse.procStatFile
var pseProcStatFile string

var pseSampled = pseProcStatFile
