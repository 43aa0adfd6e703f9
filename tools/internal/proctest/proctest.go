// Package proctest counts processes through /proc, for tests that check
// that no child process outlives its call.
package proctest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Descendants returns the pids of every live process below pid (children,
// their children, ...), zombies excluded. It reads /proc; on a system
// without it the result is empty.
func Descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// Fields after the parenthesised command: state ppid ...
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// WaitDescendants polls until pid has no more descendants than the baseline
// had, or the timeout passes; then it returns an error naming the extra
// processes. Killed processes take a moment to be reaped, hence the polling.
func WaitDescendants(pid int, baseline []int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	known := map[int]bool{}
	for _, p := range baseline {
		known[p] = true
	}
	for {
		var extra []string
		for _, p := range Descendants(pid) {
			if !known[p] {
				cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
				extra = append(extra, fmt.Sprintf("%d %q", p, strings.ReplaceAll(string(cmd), "\x00", " ")))
			}
		}
		if len(extra) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes outlived their calls: %s", len(extra), strings.Join(extra, ", "))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
