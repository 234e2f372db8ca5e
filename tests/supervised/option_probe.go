// option_probe in Go: the same command line, output and waits as option_probe.c, with the
// connection made by net.Listen/net.Dial and Go's defaults left as they are (the runtime sets
// TCP_NODELAY and a 15 s keepalive itself on every dialled and accepted connection).
//
//	option_probe_go server PORT [TIMEOUT_S]
//	option_probe_go client HOST PORT [TIMEOUT_S]
//
// Options are read with syscall.RawConn.Control and syscall.GetsockoptInt. Stdlib only; built with CGO_ENABLED=0, so the binary is static and makes raw system calls.
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// TCP_USER_TIMEOUT and TCP_NOTSENT_LOWAT are not in package syscall.
const (
	tcpUserTimeout  = 18
	tcpNotsentLowat = 25
)

var timeout = 20 * time.Second

func fail(code int, format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "option_probe_go: "+format+"\n", args...)
	os.Exit(code)
}

func number(text string, min, max int, what string) int {
	value, err := strconv.Atoi(text)
	if err != nil || value < min || value > max {
		fail(2, "%s: '%s' is not a number from %d to %d", what, text, min, max)
	}
	return value
}

func port(addr net.Addr) int {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return tcp.Port
	}
	return -1
}

// congestionName reads TCP_CONGESTION (package syscall has no string getsockopt).
func congestionName(fd uintptr) []byte {
	name := make([]byte, 16)
	size := uint32(len(name))
	_, _, errno := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_CONGESTION,
		uintptr(unsafe.Pointer(&name[0])), uintptr(unsafe.Pointer(&size)), 0)
	if errno != 0 {
		return []byte("?")
	}
	for i, c := range name[:size] {
		if c == 0 {
			return name[:i]
		}
	}
	return name[:size]
}

func printOptions(conn *net.TCPConn, side string) {
	raw, err := conn.SyscallConn()
	if err != nil {
		fail(1, "SyscallConn: %v", err)
	}
	getInt := func(fd uintptr, level, option int) int {
		value, err := syscall.GetsockoptInt(int(fd), level, option)
		if err != nil {
			return -1
		}
		return value
	}
	var line string
	err = raw.Control(func(fd uintptr) {
		clean := congestionName(fd)
		for i, c := range clean {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
				clean[i] = '?'
			}
		}
		line = fmt.Sprintf(`{"side":"%s","pid":%d,"ppid":%d,"local_port":%d,"peer_port":%d,"nodelay":%d,"sndbuf":%d,"rcvbuf":%d,`+
			`"congestion":"%s","keepalive":%d,"keepidle":%d,"keepintvl":%d,"keepcnt":%d,`+
			`"user_timeout":%d,"notsent_lowat":%d,"tos":%d}`,
			side, os.Getpid(), os.Getppid(), port(conn.LocalAddr()), port(conn.RemoteAddr()),
			getInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY),
			getInt(fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF), getInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF),
			string(clean), getInt(fd, syscall.SOL_SOCKET, syscall.SO_KEEPALIVE),
			getInt(fd, syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE), getInt(fd, syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL),
			getInt(fd, syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT), getInt(fd, syscall.IPPROTO_TCP, tcpUserTimeout),
			getInt(fd, syscall.IPPROTO_TCP, tcpNotsentLowat), getInt(fd, syscall.IPPROTO_IP, syscall.IP_TOS))
	})
	if err != nil {
		fail(1, "Control: %v", err)
	}
	fmt.Println(line)
}

func server(listenPort int) {
	listener, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(listenPort)))
	if err != nil {
		fail(1, "listen: %v", err)
	}
	fmt.Printf("{\"side\":\"server\",\"listening\":%d}\n", port(listener.Addr()))
	deadline := time.Now().Add(timeout)
	if err := listener.(*net.TCPListener).SetDeadline(deadline); err != nil {
		fail(1, "SetDeadline: %v", err)
	}
	conn, err := listener.Accept()
	if err != nil {
		fail(3, "timed out after %v waiting for a connection (%v)", timeout, err)
	}
	listener.Close()
	printOptions(conn.(*net.TCPConn), "server")
	if err := conn.SetReadDeadline(deadline); err != nil {
		fail(1, "SetReadDeadline: %v", err)
	}
	if _, err := io.Copy(io.Discard, conn); err != nil {
		fail(3, "timed out after %v waiting for the client to close (%v)", timeout, err)
	}
	conn.Close()
}

func client(host string, peerPort int) {
	dialer := net.Dialer{Timeout: timeout}
	conn, err := dialer.Dial("tcp4", net.JoinHostPort(host, strconv.Itoa(peerPort)))
	if err != nil {
		fail(1, "dial: %v", err)
	}
	printOptions(conn.(*net.TCPConn), "client")
	done := make(chan struct{})
	go func() {
		// A line or the end of stdin; a read error ends the wait too.
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(timeout):
		fail(3, "timed out after %v waiting for a line on stdin", timeout)
	}
	conn.Close()
}

func main() {
	args := os.Args[1:]
	switch {
	case len(args) >= 2 && len(args) <= 3 && args[0] == "server":
		if len(args) == 3 {
			timeout = time.Duration(number(args[2], 1, 3600, "TIMEOUT_S")) * time.Second
		}
		server(number(args[1], 0, 65535, "PORT"))
	case len(args) >= 3 && len(args) <= 4 && args[0] == "client":
		if len(args) == 4 {
			timeout = time.Duration(number(args[3], 1, 3600, "TIMEOUT_S")) * time.Second
		}
		if net.ParseIP(args[1]).To4() == nil {
			fail(2, "'%s' is not a numeric IPv4 address", args[1])
		}
		client(args[1], number(args[2], 1, 65535, "PORT"))
	default:
		fmt.Fprintln(os.Stderr, "usage: option_probe_go server PORT [TIMEOUT_S]\n       option_probe_go client HOST PORT [TIMEOUT_S]")
		os.Exit(2)
	}
}
