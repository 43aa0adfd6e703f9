package testsupport

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// RedisOptions configures a test redis-server.
type RedisOptions struct {
	// AOF turns on the append-only file (appendfsync always), so a Restart
	// keeps every acknowledged write.
	AOF bool
	// Cluster starts the server with cluster mode enabled (used by StartCluster).
	cluster bool
}

// Redis is a real redis-server process owned by one test.
type Redis struct {
	// Addr is host:port on loopback.
	Addr string
	opts RedisOptions
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// URL returns redis://Addr/0.
func (r *Redis) URL() string { return "redis://" + r.Addr + "/0" }

// Client returns a go-redis client of this server's db 0, closed when the
// test ends (before the server stops).
func (r *Redis) Client(t testing.TB) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: r.Addr})
	t.Cleanup(func() { c.Close() })
	return c
}

// StartRedis starts redis-server on a free loopback port with its own temp
// dir, waits until it answers PING, and stops it when the test ends.
func StartRedis(t testing.TB, opts RedisOptions) *Redis {
	t.Helper()
	bin := requireBinary(t, "redis-server")
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort(opts.cluster)
		if err != nil {
			t.Fatalf("find a free port: %v", err)
		}
		r := &Redis{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), opts: opts, dir: t.TempDir()}
		if lastErr = r.start(bin); lastErr == nil {
			t.Cleanup(r.stop)
			return r
		}
		r.stop()
	}
	t.Fatalf("start redis-server: %v", lastErr)
	return nil
}

func (r *Redis) args() []string {
	_, port, _ := net.SplitHostPort(r.Addr)
	args := []string{
		"--port", port, "--bind", "127.0.0.1", "--dir", r.dir,
		"--save", "", "--daemonize", "no", "--protected-mode", "no", "--loglevel", "warning",
		"--logfile", filepath.Join(r.dir, "redis.log"),
	}
	if r.opts.AOF {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	if r.opts.cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(r.dir, "nodes.conf"),
			"--cluster-node-timeout", "2000")
	}
	return args
}

func (r *Redis) start(bin string) error {
	r.cmd = exec.Command(bin, r.args()...)
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		return err
	}
	r.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(r.cmd, r.done)
	return r.waitReady(10 * time.Second)
}

func (r *Redis) waitReady(timeout time.Duration) error {
	client := goredis.NewClient(&goredis.Options{Addr: r.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ticker := time.NewTicker(20 * time.Millisecond)
	defer ticker.Stop()
	for {
		select {
		case <-r.done:
			log, _ := os.ReadFile(filepath.Join(r.dir, "redis.log"))
			return fmt.Errorf("redis-server on %s exited: %s", r.Addr, strings.TrimSpace(string(log)))
		default:
		}
		err := client.Ping(ctx).Err()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis-server on %s did not answer PING within %s: %w", r.Addr, timeout, err)
		case <-ticker.C:
		}
	}
}

// Kill sends SIGKILL and waits for the process to exit (no clean shutdown:
// what AOF had not fsynced is lost, as in a crash).
func (r *Redis) Kill() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.done
}

// Restart kills the server and starts it again on the same port and dir.
func (r *Redis) Restart(t testing.TB) {
	t.Helper()
	r.Kill()
	bin := requireBinary(t, "redis-server")
	if err := r.start(bin); err != nil {
		t.Fatalf("restart redis-server: %v", err)
	}
}

func (r *Redis) stop() {
	if r.cmd == nil || r.cmd.Process == nil || r.done == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		r.Kill()
	}
}

// Cluster is a 3-master Redis Cluster on loopback.
type Cluster struct {
	// Addrs are the masters' host:port addresses.
	Addrs []string
	nodes []*Redis
}

// StartCluster starts three cluster-enabled redis-servers, joins them with
// redis-cli --cluster create (no replicas) and waits for cluster_state:ok.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	cli := requireBinary(t, "redis-cli")
	c := &Cluster{}
	for i := 0; i < 3; i++ {
		n := StartRedis(t, RedisOptions{cluster: true})
		c.nodes = append(c.nodes, n)
		c.Addrs = append(c.Addrs, n.Addr)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, addr := range c.Addrs {
		client := goredis.NewClient(&goredis.Options{Addr: addr})
		for {
			info, err := client.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			select {
			case <-ctx.Done():
				client.Close()
				t.Fatalf("cluster node %s never reached cluster_state:ok: %v %s", addr, err, info)
			case <-time.After(50 * time.Millisecond):
			}
		}
		client.Close()
	}
	return c
}

func requireBinary(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		SkipOrFail(t, "%s not installed", name)
	}
	return path
}

// freePort finds a free loopback port. A cluster node also needs its bus port
// (port+10000) free and below 65536, so cluster ports come from 20000-39999
// instead of the kernel's ephemeral range.
func freePort(cluster bool) (int, error) {
	if !cluster {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port, nil
	}
	for attempt := 0; attempt < 100; attempt++ {
		port := 20000 + rand.IntN(20000)
		if portFree(port) && portFree(port+10000) {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port pair for a cluster node")
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
