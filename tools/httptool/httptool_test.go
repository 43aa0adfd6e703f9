package httptool

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestPost(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "elsewhere")
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/echo":
			if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || r.Header.Get("X-Key") != "k" {
				http.Error(w, "bad request shape", 400)
				return
			}
			w.Write(append([]byte("got "), body...))
		case "/big":
			w.Write([]byte(strings.Repeat("x", 2000)))
		case "/fail":
			http.Error(w, "no such thing", 404)
		case "/redirect":
			http.Redirect(w, r, other.URL+"/x", http.StatusTemporaryRedirect)
		case "/ansi":
			io.WriteString(w, "\x1b]0;pwned title\x07\x1b[1;31mred\x1b[0m\tok\r\nnext\x00\x08 line\u009b2J done\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\n")
		case "/hang":
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	mk := func(path string, o Options) *Client {
		t.Helper()
		o.URL = srv.URL + path
		c, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	out, err := mk("/echo", Options{Headers: map[string]string{"X-Key": "k"}}).Post(ctx, []byte(`{"a":1}`))
	if err != nil || out != `got {"a":1}` {
		t.Errorf("echo = %q, %v", out, err)
	}
	if _, err := mk("/big", Options{MaxResponseBytes: 1000}).Post(ctx, []byte(`{}`)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("big: %v", err)
	}
	if out, err := mk("/big", Options{MaxResponseBytes: 2000}).Post(ctx, []byte(`{}`)); err != nil || len(out) != 2000 {
		t.Errorf("big at the limit: %d bytes, %v", len(out), err)
	}
	if _, err := mk("/fail", Options{}).Post(ctx, []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "status 404: no such thing") {
		t.Errorf("fail: %v", err)
	}
	if _, err := mk("/redirect", Options{}).Post(ctx, []byte(`{}`)); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("redirect off the allowlist: %v", err)
	}
	// Terminal escape sequences are removed, their text too; \n and \t stay.
	if out, err := mk("/ansi", Options{}).Post(ctx, []byte(`{}`)); err != nil || out != "red\tok\nnext line donelink\n" {
		t.Errorf("ansi = %q, %v", out, err)
	}
	if _, err := mk("/hang", Options{Timeout: "50ms"}).Post(ctx, []byte(`{}`)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hang: %v", err)
	}
}

func TestNewChecks(t *testing.T) {
	cases := []struct {
		o    Options
		want string
	}{
		{Options{URL: "ftp://x/y"}, "absolute http or https"},
		{Options{URL: "/relative"}, "absolute http or https"},
		{Options{URL: "http://evil.example/x", AllowHosts: []string{"good.example"}}, "host not in allow_hosts"},
		{Options{URL: "http://good.example/x", Timeout: "soon"}, "positive duration"},
	}
	for _, c := range cases {
		if _, err := New(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want %q", c.o, err, c.want)
		}
	}
	if _, err := New(Options{URL: "http://good.example:8080/x", AllowHosts: []string{"good.example"}}); err != nil {
		t.Errorf("host without port in the allowlist: %v", err)
	}
}

func TestStripControl(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain\ttext\nline é ✓", "plain\ttext\nline é ✓"},
		{"\x1b]0;title\x07after", "after"},
		{"\x1b]2;title\x1b\\after", "after"},
		{"\x1b[2J\x1b[?25l\x1b[38;5;196mx\x1b[m", "x"},
		{"\x1bPdcs payload\x1b\\y", "y"},
		{"\x1b7a\x1b(Bb\x1bc", "ab"},
		{"\u009b31mc\u009d0;t\u009cd", "cd"},
		{"bell\x07 del\x7f cr\r\n", "bell del cr\n"},
		{"cut \x1b]0;never ends", "cut "},
		{"bad \xff utf8", "bad \xff utf8"},
	}
	for _, c := range cases {
		if got := StripControl(c.in); got != c.want {
			t.Errorf("StripControl(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A URL's password and its query values (an API token) appear in no error:
// a tool's error is its result, and results are training data (#30).
func TestErrorsHideURLSecrets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // connection refused from here on
	secretURL := func(base string) string {
		return strings.Replace(base, "http://", "http://user:PW5ecret@", 1) + "/api?token=T0KSECRET&q=1"
	}
	ctx := context.Background()
	var errs []error
	for _, base := range []string{srv.URL, deadURL} {
		c, err := New(Options{URL: secretURL(base)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = c.Post(ctx, []byte(`{}`))
		if err == nil {
			t.Fatalf("POST %s: no error", base)
		}
		errs = append(errs, err)
	}
	_, err := New(Options{URL: secretURL("http://evil.example"), AllowHosts: []string{"good.example"}})
	errs = append(errs, err)
	_, err = New(Options{URL: "ftp://user:PW5ecret@x/y?token=T0KSECRET"})
	errs = append(errs, err)
	// A query url.Parse keeps but cannot split is masked whole.
	errs = append(errs, errors.New(Redact("http://user:PW5ecret@x/y?token=T0KSECRET%zz")))
	_, err = New(Options{URL: "http://user:PW5ecret@[::1/y?token=T0KSECRET"})
	errs = append(errs, err)
	for i, err := range errs {
		if err == nil {
			t.Errorf("case %d: no error", i)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "PW5ecret") || strings.Contains(msg, "T0KSECRET") {
			t.Errorf("case %d: error quotes a URL secret: %s", i, msg)
		}
	}
	if msg := errs[0].Error(); !strings.Contains(msg, "status 503") || !strings.Contains(msg, "token=xxxxx") {
		t.Errorf("5xx error = %s, want the status and the redacted URL", msg)
	}
}
