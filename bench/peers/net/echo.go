// Issue 18's echo server in Go: one goroutine per connection, each reading into a 4 KiB
// buffer and writing back what it read. Usage: echo ADDR. Prints "listening on ADDR" once it
// accepts, then serves until killed.
package main

import (
	"fmt"
	"net"
	"os"
)

func serve(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: echo ADDR")
		os.Exit(2)
	}
	l, err := net.Listen("tcp", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\n", l.Addr())
	os.Stdout.Sync()
	for {
		c, err := l.Accept()
		if err != nil {
			// Out of descriptors and the like: try again, as the other servers do.
			continue
		}
		go serve(c)
	}
}
