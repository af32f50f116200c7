// Issue 19's blocking experiment in Go: N goroutines, each sleeping D milliseconds
// (time.Sleep: the goroutine parks, no OS thread blocks). Usage: block N D. Prints one JSON
// line: how many finished (must be N), the seconds from the first spawn to the last finish,
// the peak RSS (VmHWM) and the RSS before the first spawn, and the peak number of OS threads
// of the process and its peak page-table memory (VmPTE), sampled every millisecond from
// /proc/self/status by one more goroutine.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// status returns a numeric field of /proc/self/status ("VmHWM:", "Threads:"), or 0;
// kB fields are returned in bytes.
func status(key string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == key {
			v, _ := strconv.ParseInt(fields[1], 10, 64)
			if len(fields) >= 3 && fields[2] == "kB" {
				v *= 1024
			}
			return v
		}
	}
	return 0
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: block N SLEEP_MS")
		os.Exit(2)
	}
	n, err1 := strconv.Atoi(os.Args[1])
	ms, err2 := strconv.Atoi(os.Args[2])
	if err1 != nil || err2 != nil || n < 1 || ms < 0 {
		fmt.Fprintln(os.Stderr, "block: N must be positive and SLEEP_MS not negative")
		os.Exit(2)
	}
	d := time.Duration(ms) * time.Millisecond

	var peak, peakPTE atomic.Int64
	peak.Store(status("Threads:"))
	basePTE := status("VmPTE:")
	peakPTE.Store(basePTE)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if t := status("Threads:"); t > peak.Load() {
				peak.Store(t)
			}
			if p := status("VmPTE:"); p > peakPTE.Load() {
				peakPTE.Store(p)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()

	baseline := status("VmRSS:")
	var done atomic.Int64
	var wg sync.WaitGroup
	wg.Add(n)
	start := time.Now()
	for i := 0; i < n; i++ {
		go func() {
			time.Sleep(d)
			done.Add(1)
			wg.Done()
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	close(stop)
	<-sampled
	fmt.Printf("{\"completed\":%d,\"seconds\":%.6f,\"rss_bytes\":%d,\"baseline_rss_bytes\":%d,\"peak_threads\":%d,\"peak_page_table_bytes\":%d,\"baseline_page_table_bytes\":%d}\n",
		done.Load(), secs, status("VmHWM:"), baseline, peak.Load(), peakPTE.Load(), basePTE)
}
