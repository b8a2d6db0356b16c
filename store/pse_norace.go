//go:build linux && !race

package store

// init ends pse's sampling (pse.go). The new name has the length of the
// old, and a NUL byte, which no path may hold: the sample that reads it a
// second after pse started, in a goroutine of pse's that nothing orders
// with this write, sees one name or the other, either of them whole. The
// race detector reports that write all the same, so a build with it leaves
// the sampling on.
func init() {
	if pseSampled != "" {
		pseProcStatFile = pseSampled[:len(pseSampled)-1] + "\x00"
	}
}
