package transport

import (
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

func TestLineReader(t *testing.T) {
	const max = 200 << 10
	long := strings.Repeat("x", 150<<10) // spans several read-buffer windows
	tooLong := strings.Repeat("y", max+1)
	tests := []struct {
		name  string
		input string
		want  []string // lines; "!" means a line-too-long error
	}{
		{"empty input", "", nil},
		{"two lines", "a\nb\n", []string{"a", "b"}},
		{"last line without newline", "a\nb", []string{"a", "b"}},
		{"empty line", "\n", []string{""}},
		{"crlf kept for the caller to trim", "a\r\n", []string{"a\r"}},
		{"long line within limit", long + "\nz\n", []string{long, "z"}},
		{"line at the limit", strings.Repeat("w", max) + "\n", []string{strings.Repeat("w", max)}},
		{"over-long line skipped", "a\n" + tooLong + "\nz\n", []string{"a", "!", "z"}},
		{"over-long line at eof", tooLong, []string{"!"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lr := newLineReader(strings.NewReader(tt.input), max)
			var got []string
			for {
				line, err := lr.readLine()
				var tl *lineTooLongError
				switch {
				case errors.As(err, &tl):
					got = append(got, "!")
					continue
				case errors.Is(err, io.EOF):
				case err != nil:
					t.Fatalf("readLine: %v", err)
				default:
					got = append(got, string(line))
					continue
				}
				break
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Fatalf("got %d lines, want %d (%v)", len(got), len(tt.want), summarize(got))
			}
			if _, err := lr.readLine(); !errors.Is(err, io.EOF) {
				t.Fatalf("readLine after EOF = %v, want EOF again", err)
			}
		})
	}
}

func summarize(lines []string) []int {
	n := make([]int, len(lines))
	for i, l := range lines {
		n[i] = len(l)
	}
	return n
}

// repeatReader yields n copies of b, then EOF, without holding them in memory.
type repeatReader struct {
	b byte
	n int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n)
	for i := range k {
		p[i] = r.b
	}
	r.n -= k
	return k, nil
}

func TestLineReaderSkipsOverLongLineWithoutBufferingIt(t *testing.T) {
	const lineSize = 64 << 20
	in := io.MultiReader(&repeatReader{b: 'a', n: lineSize}, strings.NewReader("\n{}\n"))
	lr := newLineReader(in, 1024)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := lr.readLine()
	runtime.ReadMemStats(&after)

	var tl *lineTooLongError
	if !errors.As(err, &tl) {
		t.Fatalf("readLine = %v, want a line-too-long error", err)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > lineSize/8 {
		t.Fatalf("skipping a %d-byte line allocated %d bytes", lineSize, allocated)
	}
	line, err := lr.readLine()
	if err != nil || string(line) != "{}" {
		t.Fatalf("readLine after skipping = %q, %v; want {}", line, err)
	}
}
