// Package webtest is what tests of the web console share: a client that
// keeps cookies, as a browser does, and a page fetched with it.
//
// Only test files import it.
package webtest

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"testing"
)

// Browser returns an HTTP client that keeps cookies, as a browser does.
func Browser(t testing.TB) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

// Get fetches u with c and returns the status and the body.
func Get(t testing.TB, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
