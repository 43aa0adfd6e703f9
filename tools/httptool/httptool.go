// Package httptool POSTs a call's JSON arguments to a configured URL and
// returns the response body stripped of terminal control sequences, with a
// host allowlist (checked on the URL and on every redirect), a timeout and a
// response size limit.
package httptool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/toolrl/toolrl/internal/urlredact"
)

// Options configure a Client. Zero values mean the defaults beside them.
type Options struct {
	// URL receives the POST (http or https).
	URL string `yaml:"url" json:"url"`
	// AllowHosts lists the hosts ("example.com" or "example.com:8080") the
	// URL and its redirects may reach (default: the URL's host only).
	AllowHosts []string `yaml:"allow_hosts" json:"allow_hosts"`
	// Timeout bounds one request, on top of the call's deadline (default 10s).
	Timeout string `yaml:"timeout" json:"timeout"`
	// MaxResponseBytes bounds the response body (default 1 MiB); a larger
	// body is an error.
	MaxResponseBytes int64 `yaml:"max_response_bytes" json:"max_response_bytes"`
	// Headers are sent with every request.
	Headers map[string]string `yaml:"headers" json:"headers"`
}

// ErrNotAllowed is returned for a URL or redirect outside the allowlist.
var ErrNotAllowed = errors.New("host not in allow_hosts")

// ErrTooLarge is returned for a response body over MaxResponseBytes.
var ErrTooLarge = errors.New("response too large")

// Client posts to one URL. It is safe for concurrent use.
type Client struct {
	url     *url.URL
	safe    string // url with its password and query values masked, for errors
	allow   []string
	timeout time.Duration
	max     int64
	headers map[string]string
	http    *http.Client
}

// New checks opts and returns a client.
func New(opts Options) (*Client, error) {
	safe := Redact(opts.URL)
	u, err := url.Parse(opts.URL)
	if err != nil {
		// url.Parse's error quotes the whole URL.
		return nil, fmt.Errorf("http tool url %s: does not parse", safe)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("http tool url %s: want an absolute http or https URL", safe)
	}
	c := &Client{url: u, safe: safe, allow: opts.AllowHosts, max: opts.MaxResponseBytes, headers: opts.Headers}
	if len(c.allow) == 0 {
		c.allow = []string{u.Host}
	}
	if !c.allowed(u) {
		return nil, fmt.Errorf("http tool url %s: %w %v", safe, ErrNotAllowed, c.allow)
	}
	c.timeout = 10 * time.Second
	if opts.Timeout != "" {
		if c.timeout, err = time.ParseDuration(opts.Timeout); err != nil || c.timeout <= 0 {
			return nil, fmt.Errorf("http tool timeout %q: want a positive duration like 5s", opts.Timeout)
		}
	}
	if c.max <= 0 {
		c.max = 1 << 20
	}
	c.http = &http.Client{
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			if !c.allowed(req.URL) {
				return fmt.Errorf("redirect to %s: %w", req.URL.Host, ErrNotAllowed)
			}
			return nil
		},
		Transport: &http.Transport{
			Proxy:               nil, // never through an environment proxy
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     30 * time.Second,
		},
	}
	return c, nil
}

// Redact returns a URL as errors and logs show it: the password and every
// query value masked (urlredact.String; a query is where APIs take tokens,
// and a tool's error is its result, which is training data).
func Redact(raw string) string { return urlredact.String(raw, "http tool url", nil) }

// allowed matches host:port, or host alone for an entry without a port.
func (c *Client) allowed(u *url.URL) bool {
	return slices.Contains(c.allow, u.Host) || slices.Contains(c.allow, u.Hostname())
}

// Post sends body as application/json and returns the response body as
// text with its control sequences removed (StripControl: a model must not read
// a terminal's escape codes). A non-2xx status is an error that quotes the
// start of the body.
func (c *Client) Post(ctx context.Context, body []byte) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url.String(), bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("http tool request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/plain")
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		// The client's *url.Error quotes the URL with its query: keep
		// only what failed.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", fmt.Errorf("POST %s: %w", c.safe, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.max+1))
	if err != nil {
		return "", fmt.Errorf("POST %s: read response: %w", c.safe, err)
	}
	if int64(len(data)) > c.max {
		return "", fmt.Errorf("POST %s: %w: more than %d bytes", c.safe, ErrTooLarge, c.max)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		snippet := strings.TrimSpace(StripControl(string(data)))
		if len(snippet) > 200 {
			snippet = snippet[:200] + "..."
		}
		return "", fmt.Errorf("POST %s: status %d: %s", c.safe, resp.StatusCode, snippet)
	}
	return StripControl(string(data)), nil
}

// Close releases idle connections.
func (c *Client) Close() error {
	c.http.CloseIdleConnections()
	return nil
}
