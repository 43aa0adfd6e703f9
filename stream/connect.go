package stream

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/internal/urlredact"
)

// PasswordEnv is the environment variable read for the password when the URL
// carries none.
const PasswordEnv = "TOOLRL_REDIS_PASSWORD"

// ConnectOptions tunes Connect. The zero value is usable.
type ConnectOptions struct {
	// ClientName is sent with CLIENT SETNAME on every connection (optional).
	ClientName string
	// PoolSize is the connection pool size per node; 0 keeps go-redis's
	// default (10 per CPU).
	PoolSize int
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

// ParseURL turns a toolrl Redis URL into go-redis universal options:
//
//	redis://[user[:password]@]host[:port][,host[:port]...][/db][?options]
//	rediss://...   the same over TLS
//
// One host is a single server. Several hosts (comma-separated, or extra
// addr=host:port options) or cluster=true make a Redis Cluster client that
// uses them as seeds. sentinel=NAME (or master_name=NAME) makes the hosts
// Sentinels watching master NAME. Other options: db=N, client_name=,
// password= (as redis-py accepts it; the userinfo form wins), sentinel_password=,
// dial_timeout=, read_timeout=, write_timeout= (Go durations or seconds),
// pool_size=N, retry= (how long a writer retries, see WriteRetry) and
// group_format= (how a rollout's sink encodes groups, see GroupFormatOf);
// ParseURL only accepts the last two.
//
// The password comes from the URL, else from $TOOLRL_REDIS_PASSWORD. Errors
// never include it (they quote Redact(raw)).
func ParseURL(raw string, opts ConnectOptions) (*goredis.UniversalOptions, error) {
	safe := Redact(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("redis url %s: does not parse", safe)
	}
	o := &goredis.UniversalOptions{ClientName: opts.ClientName, PoolSize: opts.PoolSize}
	switch u.Scheme {
	case "redis":
	case "rediss":
		o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	default:
		return nil, fmt.Errorf("redis url %s: scheme %q, want redis or rediss", safe, u.Scheme)
	}
	for _, h := range strings.Split(u.Host, ",") {
		if h == "" {
			continue
		}
		o.Addrs = append(o.Addrs, withPort(h))
	}
	q := u.Query()
	for _, a := range q["addr"] {
		o.Addrs = append(o.Addrs, withPort(a))
	}
	if len(o.Addrs) == 0 {
		return nil, fmt.Errorf("redis url %s: no host", safe)
	}
	if o.TLSConfig != nil {
		if host, _, err := net.SplitHostPort(o.Addrs[0]); err == nil {
			o.TLSConfig.ServerName = host
		}
	}
	if u.User != nil {
		o.Username = u.User.Username()
		o.Password, _ = u.User.Password()
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if o.Password == "" && q.Has("password") {
		o.Password = q.Get("password")
	}
	if o.Password == "" {
		o.Password = getenv(PasswordEnv)
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		if o.DB, err = strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("redis url %s: database %q is not a number (the URL path is the database; a job is named with --job)", safe, p)
		}
	}
	for key, values := range q {
		v := values[len(values)-1]
		switch key {
		case "addr", "password", "retry", "group_format":
		case "cluster":
			if o.IsClusterMode, err = strconv.ParseBool(v); err != nil {
				return nil, fmt.Errorf("redis url %s: cluster=%q is not a boolean", safe, v)
			}
		case "sentinel", "master_name":
			o.MasterName = v
		case "sentinel_password":
			o.SentinelPassword = v
		case "client_name":
			o.ClientName = v
		case "db":
			if o.DB, err = strconv.Atoi(v); err != nil {
				return nil, fmt.Errorf("redis url %s: db=%q is not a number", safe, v)
			}
		case "pool_size":
			if o.PoolSize, err = strconv.Atoi(v); err != nil {
				return nil, fmt.Errorf("redis url %s: pool_size=%q is not a number", safe, v)
			}
		case "dial_timeout", "read_timeout", "write_timeout":
			d, err := parseDuration(v)
			if err != nil {
				return nil, fmt.Errorf("redis url %s: %s=%q: %w", safe, key, v, err)
			}
			switch key {
			case "dial_timeout":
				o.DialTimeout = d
			case "read_timeout":
				o.ReadTimeout = d
			default:
				o.WriteTimeout = d
			}
		default:
			return nil, fmt.Errorf("redis url %s: unknown option %q", safe, key)
		}
	}
	if o.MasterName == "" && len(o.Addrs) > 1 {
		o.IsClusterMode = true
	}
	if o.IsClusterMode && o.DB != 0 {
		return nil, fmt.Errorf("redis url %s: a cluster has only database 0", safe)
	}
	return o, nil
}

// Connect parses raw (see ParseURL), connects and checks the server answers
// PING within ctx. The caller closes the client.
func Connect(ctx context.Context, raw string, opts ConnectOptions) (goredis.UniversalClient, error) {
	o, err := ParseURL(raw, opts)
	if err != nil {
		return nil, err
	}
	client := goredis.NewUniversalClient(o)
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return nil, fmt.Errorf("redis %s: ping: %w", Redact(raw), err)
	}
	return client, nil
}

// DefaultWriteRetry is how long a rollout's Redis sink retries a write that
// failed on a connection error when the URL has no retry= option.
const DefaultWriteRetry = 30 * time.Second

// WriteRetry returns the URL's retry= option (a Go duration or seconds; 0
// turns retries off), or DefaultWriteRetry when it has none: how long a writer
// keeps retrying a write through a server outage (ProducerOptions.RetryFor).
func WriteRetry(raw string) (time.Duration, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return 0, fmt.Errorf("redis url %s: does not parse", Redact(raw))
	}
	q := u.Query()
	if !q.Has("retry") {
		return DefaultWriteRetry, nil
	}
	v := q.Get("retry")
	d, err := parseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("redis url %s: retry=%q is not a duration ≥ 0", Redact(raw), v)
	}
	return d, nil
}

// GroupFormatOf returns the URL's group_format= option, how a rollout's
// Redis sink encodes the groups it writes (ProducerOptions.GroupFormat):
// "json" (the default, read by every consumer) or "binary" (the binary group
// format, read by the advantage service and DecodeGroupEntry; docs/redis.md).
// Another value is an error.
func GroupFormatOf(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("redis url %s: does not parse", Redact(raw))
	}
	v := u.Query().Get("group_format")
	if err := ValidGroupFormat(v); err != nil {
		return "", fmt.Errorf("redis url %s: group_format=: %w", Redact(raw), err)
	}
	if v == "" {
		v = GroupFormatJSON
	}
	return v, nil
}

// publicOptions are the URL options whose values Redact shows: none of them
// is a secret.
var publicOptions = map[string]bool{
	"addr": true, "cluster": true, "sentinel": true, "master_name": true, "client_name": true, "db": true,
	"pool_size": true, "dial_timeout": true, "read_timeout": true, "write_timeout": true, "retry": true,
	"group_format": true,
}

// Redact returns the URL with any password replaced by "xxxxx", for logs and
// errors: the userinfo's (a lone userinfo, redis://SECRET@host, is replaced
// whole: users write a password there, not a user name), and the value of every query option that is not
// known to be public (password=, sentinel_password=, and any unknown option,
// which an error quotes: auth=, pass=, a typo). A string that does not parse
// as a URL is replaced whole. It is urlredact.String, the one redactor of
// every URL toolrl prints.
func Redact(raw string) string {
	return urlredact.String(raw, "redis url", publicOptions)
}

func withPort(host string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), "6379")
}

func parseDuration(v string) (time.Duration, error) {
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		return time.Duration(secs * float64(time.Second)), nil
	}
	return time.ParseDuration(v)
}
