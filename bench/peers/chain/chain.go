// Document 001's spawn chain in Go: N goroutines, each waiting for a number on its channel
// and sending number+1 on the next one's. Usage: chain N. Prints one JSON line with the
// result (must be N), the seconds from the first spawn to the result, and the peak RSS
// (VmHWM) of the process.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func counter(in <-chan int, out chan<- int) {
	out <- 1 + <-in
}

// vmHWM returns the peak resident set of this process in bytes, or 0.
func vmHWM() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: chain N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[1])
	if err != nil || n < 1 {
		fmt.Fprintln(os.Stderr, "chain: N must be a positive integer")
		os.Exit(2)
	}
	start := time.Now()
	result := make(chan int)
	next := result
	for i := 0; i < n; i++ {
		in := make(chan int)
		go counter(in, next)
		next = in
	}
	next <- 0
	r := <-result
	secs := time.Since(start).Seconds()
	fmt.Printf("{\"result\":%d,\"seconds\":%.6f,\"rss_bytes\":%d}\n", r, secs, vmHWM())
}
